"""A deployment's dagster.yaml checked the way Dagster would load it, without the services it names."""

from __future__ import annotations

import importlib
from pathlib import Path

from dagster._config import process_config, resolve_to_config_type
from dagster._core.instance.ref import InstanceRef

SECTIONS = ("storage", "compute_logs", "run_launcher", "run_coordinator")


def validated_instance_ref(config_dir: Path, home: Path) -> InstanceRef:
    """The instance ref of `config_dir/dagster.yaml`, after every section's config validated
    against its class's schema (the environment must hold the variables the file reads)."""
    ref = InstanceRef.from_dir(str(home), config_dir=str(config_dir))
    for section in SECTIONS:
        class_data = getattr(ref, f"{section}_data")
        configurable = getattr(importlib.import_module(class_data.module_name), class_data.class_name)
        result = process_config(resolve_to_config_type(configurable.config_type()), class_data.config_dict)
        assert result.success, f"{section}: {[error.message for error in result.errors]}"
    return ref
