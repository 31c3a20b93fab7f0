"""The vocabulary every layer shares: what a scope is, what happened to a trial folder, the roots, the run tags, the defaults the settings share with the domain."""
