"""A scope's run as a whole: the steps in order and publish, their context built from the settings, the dry run."""
