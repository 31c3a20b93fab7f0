#!/usr/bin/env python3
"""Write synthetic Harbor trace trees shaped like real terminus-2 RL runs, for benchmarks.

Real runs are too big and too private to ship: 22k trials and 18.6 GiB in one of
them, most of it `agent/episode-N/prompt.txt` files that repeat the whole
conversation so far. This writes the same tree shape, file names, JSON layouts
(copied from sample_traces/ and Harbor's golden trajectories) and mix of odd
trials, deterministically for a seed, so listing, fetching and export code can be
measured at scale:

    python trace_assets_tests/support/generate_traces.py OUT_DIR --run-id RUN --trials 10000 --prompt-scale 0.05

The tree goes to OUT_DIR/RUN/trace_jobs/; OUT_DIR/RUN/manifest.json says what was
written: counts by kind and secret, bytes, and one entry per trial with the same
fields as trace_assets_tests/data/harbor_sample/truth.json.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import string
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

AGENT_NAME = "terminus-2"
AGENT_VERSION = "2.0.0"
MODEL_NAME = "hosted_vllm/Qwen3-Coder-30B-A3B-Instruct"
MODEL_PROVIDER, MODEL_SHORT_NAME = MODEL_NAME.split("/", 1)
SCHEMA_VERSION = "ATIF-v1.5"
RUN_STARTED_AT = datetime(2026, 7, 25, 12, 0, 0, tzinfo=UTC)
SHELL_PROMPT = "root@sandbox:/app# "
TASK_FAMILIES = ("pymethods2test", "stack-bash", "stack-pytest", "swesmith")

# Share of trials of each unusual kind, in the order they get a trial when there
# are too few trials for all; every other trial is "normal".
RARE_KIND_RATES = {
    "no_agent_turns": 0.013,  # the model never answered: trajectory holds the first prompt only
    "exception": 0.008,  # result.json has exception_info, no verifier ran
    "summarized": 0.006,  # context summarization: trajectory.summarization-1-*.json subagents
    "continued": 0.004,  # trajectory.json continues in trajectory.cont-1.json
    "unscored": 0.003,  # interrupted: no result.json, no verifier/
    "no_trajectory": 0.002,  # agent setup failed: agent/setup.log only
    "corrupt_result": 0.001,  # result.json cut short mid-write
}
SECRET_RATE = 0.02
SECRET_KINDS = ("github_token", "aws_access_key_id", "openai_key", "hf_token", "jwt", "pem_placeholder")
SOLVED_RATE = 0.45
TEST_STDERR_RATE = 0.3
REASONING_RATE = 0.4
TRIALS_PER_TASK = 3  # RL runs roll each task out several times
MAX_AGENT_STEPS = 40
OBSERVATION_BYTES = (200, 8000)
EXCEPTIONS = (
    ("ContextLengthExceededError", "Prompt of {tokens} tokens exceeds the model's context window of 131072 tokens"),
    ("AgentTimeoutError", "Agent execution timed out after 1800.0 seconds"),
    ("RuntimeError", "Environment container exited unexpectedly with code 137 (OOM killed)"),
)

# terminus-2's JSON-mode instruction, verbatim from sample_traces/: every trial's first prompt starts with it.
TERMINUS_INSTRUCTIONS = """You are an AI assistant tasked with solving command-line tasks in a Linux environment. You will be given a task description and the output from previously executed commands. Your goal is to solve the task by providing batches of shell commands.

Format your response as JSON with the following structure:

{
  "analysis": "Analyze the current state based on the terminal output provided. What do you see? What has been accomplished? What still needs to be done?",
  "plan": "Describe your plan for the next steps. What commands will you run and why? Be specific about what you expect each command to accomplish.",
  "commands": [
    {
      "keystrokes": "ls -la\\n",
      "duration": 0.1
    },
    {
      "keystrokes": "cd project\\n",
      "duration": 0.1
    }
  ],
  "task_complete": true
}

Required fields:
- "analysis": Your analysis of the current situation
- "plan": Your plan for the next steps
- "commands": Array of command objects to execute

Optional fields:
- "task_complete": Boolean indicating if the task is complete (defaults to false if not present)

Command object structure:
- "keystrokes": String containing the exact keystrokes to send to the terminal (required)
- "duration": Number of seconds to wait for the command to complete before the next command will be executed (defaults to 1.0 if not present)

IMPORTANT: The text inside "keystrokes" will be used completely verbatim as keystrokes. Write commands exactly as you want them sent to the terminal:
- You must end every command with a newline (\\n) or it will not execute.
- For special key sequences, use tmux-style escape sequences:
  - C-c for Ctrl+C
  - C-d for Ctrl+D

The "duration" attribute specifies the number of seconds to wait for the command to complete (default: 1.0) before the next command will be executed. On immediate tasks (e.g., cd, ls, echo, cat) set a duration of 0.1 seconds. On commands (e.g., gcc, find, rustc) set a duration of 1.0 seconds. On slow commands (e.g., make, python3 [long running script], wget [file]) set an appropriate duration as you determine necessary.

It is better to set a smaller duration than a longer duration. It is always possible to wait again if the prior output has not finished, by running {"keystrokes": "", "duration": 10.0} on subsequent requests to wait longer. Never wait longer than 60 seconds; prefer to poll to see intermediate result status.

Important notes:
- Each command's keystrokes are sent exactly as written to the terminal
- Do not include extra whitespace before or after the keystrokes unless it's part of the intended command
- Extra text before or after the JSON will generate warnings but be tolerated
- The JSON must be valid - use proper escaping for quotes and special characters within strings
- Commands array can be empty if you want to wait without taking action

"""

TASK_STATEMENTS = {
    "pymethods2test": "Write pytest tests for the module in /app/src ({task}). Make every test pass.",
    "stack-bash": "Write /app/solution.sh answering the shell question below ({task}). The checker runs it in a clean shell.",
    "stack-pytest": "The test suite in /app fails ({task}). Fix the code, not the tests, until pytest passes.",
    "swesmith": "Resolve the issue below in the repository at /testbed ({task}). Hidden tests will check the fix.",
}
DETAIL_SENTENCES = (
    "The function must keep its public signature.",
    "Inputs may contain unicode and empty strings.",
    "Do not add new third-party dependencies.",
    "Edge cases around negative numbers are known to be broken.",
    "The output has to match the expected format byte for byte.",
    "Large inputs (over a million lines) must finish within ten seconds.",
    "Configuration is read from /app/config.toml when present.",
    "Errors must be reported on stderr with a non-zero exit status.",
    "The parser currently mishandles quoted fields that contain commas.",
    "Timestamps are UTC and formatted as ISO 8601.",
)
ANALYSIS_SENTENCES = (
    "The previous command completed without errors.",
    "The test run shows two failures in the parsing module.",
    "The directory listing shows the source files and a tests folder.",
    "The traceback points at an off-by-one error in the loop bounds.",
    "The installed package versions look compatible.",
    "The grep output shows where the helper is defined.",
    "The script exits with status 1 because the input file is missing.",
    "Nothing has been changed yet; I need to inspect the code first.",
    "The fix applied in the last step made the failing test pass.",
    "There is still one failing assertion about the empty input case.",
)
PLAN_SENTENCES = (
    "Inspect the module to understand its structure.",
    "Run the test suite again to confirm the fix.",
    "Edit the function to handle the empty case explicitly.",
    "Search the code base for other callers of this helper.",
    "Create the solution script and make it executable.",
    "Check the installed dependencies before changing anything.",
)
COMMANDS = (
    "ls -la",
    "cat src/main.py",
    "python -m pytest -q",
    "grep -rn TODO src",
    "pip install -e .",
    "git status",
    "git diff",
    "python -c 'import app; print(app.__version__)'",
    "sed -n '1,80p' src/parser.py",
    "chmod +x solution.sh && ./solution.sh",
    "find . -name '*.py' | head -50",
)
WORDS = (
    "parser", "config", "utils", "models", "reader", "writer", "cache", "client", "server", "schema",
    "tokens", "matrix", "report", "export", "loader", "render", "queue", "worker", "index", "query",
)  # fmt: skip
PACKAGES = ("numpy", "pandas", "requests", "pytest", "pydantic", "click", "rich", "attrs", "pyyaml", "httpx")
SUMMARY_PROMPT = """You are about to hand off your work to another AI agent.
            Please provide a comprehensive summary of what you have
            accomplished so far on this task:

Original Task: {task}


Based on the conversation history, please provide a detailed summary covering:
1. **Major Actions Completed** - List each significant command you executed
            and what you learned from it.
2. **Important Information Learned** - A summary of crucial findings, file
            locations, configurations, error messages, or system state discovered.
3. **Challenging Problems Addressed** - Any significant issues you
            encountered and how you resolved them.
4. **Current Status** - Exactly where you are in the task completion process.


Be comprehensive and detailed. The next agent needs to understand everything
            that has happened so far in order to continue."""
PICKUP_PROMPT = """You are picking up work from a previous AI agent on this task:

**Original Task:** {task}


**Summary from Previous Agent:**
{summary}

**Current Terminal Screen:**
{screen}

Please begin by asking several questions (at least five, more if necessary)
about the current state of the solution that are not answered in the summary
from the prior agent. After you ask these questions you will be on your own,
so ask everything you need to know."""
QUESTIONS_PROMPT = (
    "The next agent has a few questions for you, please answer each of them one by one in detail:\n\n{questions}"
)
ANSWERS_HANDOFF = (
    "Here are the answers the other agent provided.\n\n{answers}\n\n"
    "Continue working on this task from where the previous agent left off. You can no longer ask questions. "
    "Please follow the spec to interact with the terminal."
)
SUMMARIZATION_STEP_MESSAGE = "Performed context summarization and handoff to continue task."
SUBAGENT_ROLES = (
    ("summary", "Context summarization 1: Step 1 - Summary generation"),
    ("questions", "Context summarization 1: Step 2 - Question asking"),
    ("answers", "Context summarization 1: Step 3 - Answer providing"),
)


@dataclass(frozen=True)
class TrialPlan:
    """What one trial will be; decided up front so names are unique and rare kinds are placed exactly."""

    index: int
    task: str
    trial_name: str
    kind: str
    step_folder: str  # "" or "step-<i>" under trace_jobs/
    n_agent_steps: int
    reward: float | None
    secret: str | None
    exception: str | None


@dataclass(frozen=True)
class AgentTurn:
    response: str
    reasoning: str | None
    observation: str


@dataclass
class WriteCounter:
    files: int = 0
    bytes: int = 0

    def write(self, path: Path, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        with open(path, "wb") as handle:
            handle.write(raw)
        self.files += 1
        self.bytes += len(raw)


def _kind_sequence(trials: int, rng: random.Random) -> list[str]:
    """Every rare kind at its rate but at least once, as long as they stay a minority; shuffled."""
    counts: dict[str, int] = {}
    room = trials // 2
    for kind, rate in RARE_KIND_RATES.items():
        count = min(max(1, round(rate * trials)), room)
        if count:
            counts[kind] = count
            room -= count
    kinds = [kind for kind, count in counts.items() for _ in range(count)]
    kinds += ["normal"] * (trials - len(kinds))
    rng.shuffle(kinds)
    return kinds


def _agent_step_count(kind: str, rng: random.Random) -> int:
    if kind in ("no_agent_turns", "no_trajectory"):
        return 0
    steps = 1 + int((MAX_AGENT_STEPS - 1) * rng.betavariate(1.4, 2.6))  # mean about 14, long tail to 40
    return max(steps, 4) if kind in ("continued", "summarized") else steps


def _trial_name(task: str, rng: random.Random) -> str:
    """Harbor's `<task>__<7 random letters and digits>`."""
    return f"{task}__{''.join(rng.choices(string.ascii_letters + string.digits, k=7))}"


def plan_trials(run_id: str, trials: int, seed: int, nested_steps: int) -> list[TrialPlan]:
    """Kinds, tasks, names, rewards and secrets of every trial, from the run's seed alone."""
    rng = random.Random(f"{seed}:{run_id}:plan")
    kinds = _kind_sequence(trials, rng)
    tasks = [f"{rng.choice(TASK_FAMILIES)}-{rng.randint(1, 3000)}" for _ in range(max(1, trials // TRIALS_PER_TASK))]
    step_counts = [_agent_step_count(kind, rng) for kind in kinds]
    normal = [i for i, kind in enumerate(kinds) if kind == "normal"]
    secret_holders = rng.sample(normal, min(len(normal), max(1, round(SECRET_RATE * trials)))) if normal else []
    secrets = {index: SECRET_KINDS[n % len(SECRET_KINDS)] for n, index in enumerate(sorted(secret_holders))}
    names: set[str] = set()
    plans = []
    for index, kind in enumerate(kinds):
        task = rng.choice(tasks)
        name = _trial_name(task, rng)
        while name in names:
            name = _trial_name(task, rng)
        names.add(name)
        if kind in ("exception", "unscored"):
            reward = None
        elif kind in ("no_agent_turns", "no_trajectory", "corrupt_result"):
            reward = 0.0
        else:
            reward = 1.0 if rng.random() < SOLVED_RATE else 0.0
        plans.append(
            TrialPlan(
                index=index,
                task=task,
                trial_name=name,
                kind=kind,
                step_folder=f"step-{1 + index * nested_steps // trials}" if nested_steps else "",
                n_agent_steps=step_counts[index],
                reward=reward,
                secret=secrets.get(index),
                exception=rng.choice(EXCEPTIONS)[0] if kind == "exception" else None,
            )
        )
    return plans


def _terminal_line_pool(rng: random.Random, size: int = 4000) -> list[str]:
    """Lines that terminals of such runs print: listings, test runs, tracebacks, pip and git chatter."""

    def module() -> str:
        return rng.choice(WORDS)

    makers = (
        lambda: (
            f"-rw-r--r-- 1 root root {rng.randint(40, 99999):>6} Jul {rng.randint(1, 28):>2} "
            f"{rng.randint(0, 23):02}:{rng.randint(0, 59):02} {module()}_{rng.randint(0, 40)}.py"
        ),
        lambda: (
            f"tests/test_{module()}.py::test_{module()}_{rng.randint(0, 60)} "
            f"{rng.choice(('PASSED', 'PASSED', 'PASSED', 'FAILED', 'ERROR'))}{' ' * rng.randint(5, 30)}[{rng.randint(1, 100):>3}%]"
        ),
        lambda: (
            f'  File "/app/src/{module()}.py", line {rng.randint(1, 900)}, in {module()}_{rng.choice(("load", "parse", "run"))}'
        ),
        lambda: f"    {module()} = {module()}.{rng.choice(('get', 'pop', 'split', 'strip'))}({rng.randint(0, 9)})",
        lambda: (
            f"Requirement already satisfied: {rng.choice(PACKAGES)} in /usr/local/lib/python3.11/site-packages "
            f"({rng.randint(0, 3)}.{rng.randint(0, 30)}.{rng.randint(0, 9)})"
        ),
        lambda: f"src/{module()}.py:{rng.randint(1, 700)}:    # TODO: {rng.choice(DETAIL_SENTENCES).lower()}",
        lambda: f"{rng.choice(('+', '-', ' '))}    return {module()}({module()}, {rng.randint(0, 99)})",
        lambda: (
            f"{rng.choice(('AssertionError', 'KeyError', 'ValueError', 'TypeError'))}: "
            f"{rng.choice(('assert', 'expected'))} {rng.randint(0, 999)} == {rng.randint(0, 999)}"
        ),
        lambda: f"bash: {module()}: command not found",
        lambda: f" M src/{module()}.py",
    )
    return [rng.choice(makers)() for _ in range(size)]


def _secret_value(kind: str, rng: random.Random) -> str:
    """A value that looks like a leaked credential of `kind` to a secret scanner."""
    alnum = string.ascii_letters + string.digits
    if kind == "github_token":
        return "ghp_" + "".join(rng.choices(alnum, k=36))
    if kind == "aws_access_key_id":
        return "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))
    if kind == "openai_key":
        return "sk-proj-" + "".join(rng.choices(alnum + "-_", k=48))
    if kind == "hf_token":
        return "hf_" + "".join(rng.choices(string.ascii_letters, k=34))
    if kind == "jwt":
        claims = json.dumps({"sub": str(rng.randint(10**8, 10**9)), "iat": 1753400000}).encode()
        payload = base64.urlsafe_b64encode(claims).rstrip(b"=").decode()
        return f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{payload}." + "".join(rng.choices(alnum + "-_", k=43))
    return "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7...\n...\n-----END PRIVATE KEY-----"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _tail(segments: list[tuple[str, str]], budget: int) -> list[tuple[str, str]]:
    """The most recent (role, text) segments within `budget` characters, the oldest one cut to fit."""
    kept = []
    for role, text in reversed(segments):
        if budget <= 0:
            break
        kept.append((role, text[-budget:]))
        budget -= len(text)
    kept.reverse()
    return kept


class TrialWriter:
    """Writes one trial folder; all randomness comes from a generator seeded by the trial alone."""

    def __init__(self, plan: TrialPlan, run: RunWriter) -> None:
        self.plan = plan
        self.run = run
        self.rng = random.Random(f"{run.seed}:{run.run_id}:{plan.index}")
        self.dir = run.trace_jobs / plan.step_folder / plan.trial_name
        self.session_id = _uuid(self.rng)
        self.started_at = RUN_STARTED_AT + timedelta(seconds=plan.index * 7 + self.rng.randint(0, 3600))
        self.task_text = self._task_description()
        self.instruction = (
            f"{TERMINUS_INSTRUCTIONS}Task Description:\n{self.task_text}\n\nCurrent terminal state:\n{SHELL_PROMPT}\n\n"
        )
        self.with_reasoning = self.rng.random() < REASONING_RATE
        self.secret_step = self.rng.randrange(plan.n_agent_steps) if plan.secret is not None else None
        self.prompt_chars = 0
        self.response_chars = 0

    def write(self) -> WriteCounter:
        counter = WriteCounter()
        plan = self.plan
        agent_dir = self.dir / "agent"
        os.makedirs(agent_dir)
        turns = [self._agent_turn(i) for i in range(plan.n_agent_steps)]
        counter.write(self.dir / "config.json", json.dumps(self._config(), indent=2))
        if plan.kind == "no_trajectory":
            counter.write(agent_dir / "setup.log", self._setup_log())
        else:
            self._write_agent_files(agent_dir, turns, counter)
        counter.write(self.dir / "trial.log", self._trial_log(turns))
        if plan.kind != "unscored":
            result = json.dumps(self._result(), indent=4)
            if plan.kind == "corrupt_result":
                result = result[: int(len(result) * self.rng.uniform(0.2, 0.6))]
            counter.write(self.dir / "result.json", result)
        if plan.reward is not None:
            self._write_verifier(counter)
        return counter

    # -- conversation -------------------------------------------------------

    def _task_description(self) -> str:
        task_rng = random.Random(self.plan.task)  # the same task reads the same in every trial
        family = self.plan.task.rsplit("-", 1)[0]
        details = " ".join(task_rng.choices(DETAIL_SENTENCES, k=task_rng.randint(2, 12)))
        return f"{TASK_STATEMENTS[family].format(task=self.plan.task)}\n{details}"

    def _agent_turn(self, index: int) -> AgentTurn:
        rng = self.rng
        last = index == self.plan.n_agent_steps - 1
        commands = rng.choices(COMMANDS, k=rng.randint(1, 3))
        response = json.dumps(
            {
                "analysis": f"Step {index}: " + " ".join(rng.choices(ANALYSIS_SENTENCES, k=rng.randint(1, 6))),
                "plan": " ".join(rng.choices(PLAN_SENTENCES, k=rng.randint(1, 3))),
                "commands": [
                    {"keystrokes": f"{command}\n", "duration": rng.choice((0.1, 1.0, 5.0))} for command in commands
                ],
                "task_complete": last and self.plan.reward == 1.0,
            },
            indent=2,
        )
        reasoning = (
            " ".join(rng.choices(ANALYSIS_SENTENCES + PLAN_SENTENCES, k=rng.randint(2, 10)))
            if self.with_reasoning
            else None
        )
        return AgentTurn(response, reasoning, self._terminal_output(commands, secret_here=index == self.secret_step))

    def _terminal_output(self, commands: list[str], *, secret_here: bool) -> str:
        low, high = OBSERVATION_BYTES
        target = int(low * (high / low) ** self.rng.random())  # log-uniform, so most are short
        pool = self.run.line_pool
        lines = self.rng.choices(pool, k=max(1, target // self.run.mean_line_chars))
        if secret_here and self.plan.secret is not None:
            lines.append(_secret_value(self.plan.secret, self.rng))
        typed = "".join(f"{SHELL_PROMPT}{command}\n" for command in commands)
        return "New Terminal Output:\n\n" + typed + "\n".join(lines) + "\n" + SHELL_PROMPT

    def _handoff_texts(self, turns: list[AgentTurn]) -> dict[str, str]:
        """The summary/questions/answers exchange Harbor's summarization writes, worded for this trial."""
        done = "\n".join(
            f"   - Ran `{json.loads(turn.response)['commands'][0]['keystrokes'].strip()}`" for turn in turns
        )
        summary = (
            f"I have been working on this task. Here's what I've accomplished:\n\n1. **Major Actions Completed**:\n{done}\n\n"
            "2. **Important Information Learned**:\n   - The code lives in /app/src and the tests in /app/tests\n\n"
            "3. **Challenging Problems Addressed**:\n   - Some tests still fail on edge cases\n\n"
            "4. **Current Status**:\n   - The fix is partially complete"
        )
        questions = "I have the following questions about the current state:\n\n" + "\n".join(
            f"{n}. {question}"
            for n, question in enumerate(
                (
                    "Which tests are still failing?",
                    "Which files have been modified so far?",
                    "Were any dependencies installed?",
                    "Is there a reproduction command for the failure?",
                    "What exactly does the task require?",
                ),
                start=1,
            )
        )
        answers = "Here are the answers:\n\n" + "\n".join(
            f"{n}. {sentence}" for n, sentence in enumerate(self.rng.choices(ANALYSIS_SENTENCES, k=5), start=1)
        )
        screen = turns[-1].observation[-400:] if turns else SHELL_PROMPT
        return {
            "summary_prompt": SUMMARY_PROMPT.format(task=self.task_text),
            "summary": summary,
            "pickup": PICKUP_PROMPT.format(task=self.task_text, summary=summary, screen=screen),
            "questions": questions,
            "questions_prompt": QUESTIONS_PROMPT.format(questions=questions),
            "answers": answers,
            "answers_handoff": ANSWERS_HANDOFF.format(answers=answers),
        }

    # -- agent/ -------------------------------------------------------------

    def _write_agent_files(self, agent_dir: Path, turns: list[AgentTurn], counter: WriteCounter) -> None:
        plan = self.plan
        main = self._trajectory_header(self.session_id, AGENT_NAME, {"parser": "json"})
        main["steps"] = [{"step_id": 1, "source": "user", "message": self.instruction}]
        conversation = [("user", self.instruction)]
        if plan.kind in ("summarized", "continued"):
            split = self.rng.randint(2, plan.n_agent_steps - 2)
            before, after = turns[:split], turns[split:]
            texts = self._handoff_texts(before)
        else:
            before, after, texts = turns, [], {}
        main["steps"] += self._agent_steps(before, first_step_id=2)
        self._write_episodes(agent_dir, before, conversation, 0, counter)
        if plan.kind == "summarized":
            main["steps"] += self._summarization_steps(len(main["steps"]) + 1, texts, after)
            self._write_subagents(agent_dir, before, texts, counter)
            conversation = [("user", self.instruction), ("user", texts["answers_handoff"])]
            self._write_episodes(agent_dir, after, conversation, len(before), counter)
        elif plan.kind == "continued":
            main["continued_trajectory_ref"] = "trajectory.cont-1.json"
            counter.write(agent_dir / "trajectory.cont-1.json", self._continuation(texts, after))
            conversation = [
                ("user", self.instruction),
                ("user", texts["pickup"]),
                ("assistant", texts["questions"]),
                ("user", texts["answers_handoff"]),
            ]
            self._write_episodes(agent_dir, after, conversation, len(before), counter)
        counter.write(agent_dir / "trajectory.json", json.dumps(main, indent=2))

    def _trajectory_header(self, session_id: str, agent_name: str, extra: dict[str, object]) -> dict[str, object]:
        return {
            "schema_version": SCHEMA_VERSION,
            "session_id": session_id,
            "agent": {"name": agent_name, "version": AGENT_VERSION, "model_name": MODEL_NAME, "extra": extra},
        }

    def _agent_steps(self, turns: list[AgentTurn], first_step_id: int) -> list[dict[str, object]]:
        steps: list[dict[str, object]] = []
        for offset, turn in enumerate(turns):
            step: dict[str, object] = {
                "step_id": first_step_id + offset,
                "source": "agent",
                "model_name": MODEL_NAME,
                "message": turn.response,
            }
            if turn.reasoning is not None:
                step["reasoning_content"] = turn.reasoning
            step["observation"] = {"results": [{"content": turn.observation}]}
            steps.append(step)
        return steps

    def _summarization_steps(
        self, first_step_id: int, texts: dict[str, str], after: list[AgentTurn]
    ) -> list[dict[str, object]]:
        refs = [
            {
                "session_id": f"{self.session_id}-summarization-1-{role}",
                "trajectory_path": f"trajectory.summarization-1-{role}.json",
                "extra": {"summary": summary},
            }
            for role, summary in SUBAGENT_ROLES
        ]
        return [
            {
                "step_id": first_step_id,
                "source": "system",
                "message": SUMMARIZATION_STEP_MESSAGE,
                "observation": {"results": [{"subagent_trajectory_ref": refs}]},
            },
            {"step_id": first_step_id + 1, "source": "user", "message": texts["answers_handoff"]},
            *self._agent_steps(after, first_step_id + 2),
        ]

    def _write_subagents(
        self, agent_dir: Path, before: list[AgentTurn], texts: dict[str, str], counter: WriteCounter
    ) -> None:
        copied_history = [{"step_id": 1, "source": "user", "message": self.instruction, "is_copied_context": True}]
        for step in self._agent_steps(before, first_step_id=2):
            copied_history.append(
                {
                    **step,
                    "is_copied_context": True,
                    "extra": {"note": "Metrics omitted to avoid duplication - already recorded in parent trajectory"},
                }
            )
        summary_prompt_id = len(copied_history) + 1
        conversations = {
            "summary": [
                *copied_history,
                {"step_id": summary_prompt_id, "source": "user", "message": texts["summary_prompt"]},
                self._subagent_answer(summary_prompt_id + 1, texts["summary"], texts["summary_prompt"]),
            ],
            "questions": [
                {"step_id": 1, "source": "user", "message": texts["pickup"]},
                self._subagent_answer(2, texts["questions"], texts["pickup"]),
            ],
            "answers": [
                *copied_history,
                {
                    "step_id": summary_prompt_id,
                    "source": "user",
                    "message": texts["summary_prompt"],
                    "is_copied_context": True,
                },
                {
                    "step_id": summary_prompt_id + 1,
                    "source": "agent",
                    "model_name": MODEL_NAME,
                    "message": texts["summary"],
                    "is_copied_context": True,
                    "extra": {"note": "Copied from summary subagent - metrics already recorded there"},
                },
                {"step_id": summary_prompt_id + 2, "source": "user", "message": texts["questions_prompt"]},
                self._subagent_answer(summary_prompt_id + 3, texts["answers"], texts["questions_prompt"]),
            ],
        }
        for role, steps in conversations.items():
            answer_metrics = steps[-1]["metrics"]
            document = self._trajectory_header(
                f"{self.session_id}-summarization-1-{role}",
                f"{AGENT_NAME}-summarization-{role}",
                {"parent_session_id": self.session_id, "summarization_index": 1},
            )
            document["steps"] = steps
            document["final_metrics"] = {
                "total_prompt_tokens": answer_metrics["prompt_tokens"],
                "total_completion_tokens": answer_metrics["completion_tokens"],
                "total_cached_tokens": 0,
                "total_cost_usd": None,
            }
            counter.write(agent_dir / f"trajectory.summarization-1-{role}.json", json.dumps(document, indent=2))

    def _subagent_answer(self, step_id: int, message: str, prompt: str) -> dict[str, object]:
        return {
            "step_id": step_id,
            "source": "agent",
            "model_name": MODEL_NAME,
            "message": message,
            "metrics": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": len(message) // 4,
                "cached_tokens": 0,
            },
        }

    def _continuation(self, texts: dict[str, str], after: list[AgentTurn]) -> str:
        document = self._trajectory_header(self.session_id, AGENT_NAME, {"parser": "json", "continuation_index": 1})
        document["steps"] = [
            {"step_id": 1, "source": "user", "message": self.instruction, "is_copied_context": True},
            {"step_id": 2, "source": "user", "message": texts["pickup"], "is_copied_context": True},
            {
                "step_id": 3,
                "source": "agent",
                "model_name": MODEL_NAME,
                "message": texts["questions"],
                "is_copied_context": True,
            },
            {"step_id": 4, "source": "user", "message": texts["answers_handoff"], "is_copied_context": True},
            *self._agent_steps(after, first_step_id=5),
        ]
        return json.dumps(document, indent=2)

    def _write_episodes(
        self,
        agent_dir: Path,
        turns: list[AgentTurn],
        conversation: list[tuple[str, str]],
        first_episode: int,
        counter: WriteCounter,
    ) -> None:
        """episode-N/ per model call: the prompt as sent (the whole conversation so far), the reply, the request."""
        scale = self.run.prompt_scale
        full_chars = sum(len(text) for _, text in conversation)
        for offset, turn in enumerate(turns):
            self.prompt_chars += full_chars
            self.response_chars += len(turn.response)
            if self.run.episode_prompts:
                kept = _tail(conversation, max(1, int(full_chars * scale))) if scale < 1 else conversation
                episode_dir = agent_dir / f"episode-{first_episode + offset}"
                os.mkdir(episode_dir)
                counter.write(episode_dir / "prompt.txt", "\n\n".join(text for _, text in kept))
                counter.write(episode_dir / "response.txt", turn.response)
                debug = {
                    "model": MODEL_NAME,
                    "messages": [{"role": role, "content": text} for role, text in kept],
                    "optional_params": {"temperature": 0.7, "max_tokens": 4096},
                }
                counter.write(episode_dir / "debug.json", json.dumps(debug))
            conversation.append(("assistant", turn.response))
            conversation.append(("user", turn.observation))
            full_chars += len(turn.response) + len(turn.observation)

    # -- the other files ----------------------------------------------------

    def _config(self) -> dict[str, object]:
        return {
            "trial_name": self.plan.trial_name,
            "task": {"path": f"tasks/{self.plan.task}"},
            "agent": {"name": AGENT_NAME, "model_name": MODEL_NAME},
        }

    def _finished_at(self) -> datetime:
        return self.started_at + timedelta(seconds=60 + 40 * self.plan.n_agent_steps + self.rng.randint(0, 300))

    def _result(self) -> dict[str, object]:
        plan = self.plan
        finished_at = self._finished_at()
        trials_dir = f"trace_jobs/{plan.step_folder}".rstrip("/")
        exception_info = None
        if plan.exception is not None:
            message = dict(EXCEPTIONS)[plan.exception].format(tokens=131072 + self.rng.randint(1, 9000))
            exception_info = {
                "exception_type": plan.exception,
                "exception_message": message,
                "exception_traceback": (
                    "Traceback (most recent call last):\n"
                    '  File "/usr/local/lib/python3.11/site-packages/harbor/trial/trial.py", line 412, in run\n'
                    "    await self._run_agent()\n"
                    f"{plan.exception}: {message}\n"
                ),
                "occurred_at": _timestamp(finished_at),
            }
        return {
            "id": _uuid(self.rng),
            "task_name": plan.task,
            "trial_name": plan.trial_name,
            "trial_uri": f"file:///{trials_dir}/{plan.trial_name}",
            "task_id": {"path": f"tasks/{plan.task}"},
            "source": None,
            "task_checksum": f"{random.Random(plan.task).getrandbits(64):016x}",
            "config": {
                "task": {
                    "path": f"tasks/{plan.task}",
                    "git_url": None,
                    "git_commit_id": None,
                    "name": None,
                    "ref": None,
                    "overwrite": False,
                    "download_dir": None,
                    "source": None,
                },
                "trial_name": plan.trial_name,
                "trials_dir": trials_dir,
                "install_only": False,
                "timeout_multiplier": 1.0,
                "agent_timeout_multiplier": None,
                "verifier_timeout_multiplier": None,
                "agent_setup_timeout_multiplier": None,
                "environment_build_timeout_multiplier": None,
                "agent": {
                    "name": AGENT_NAME,
                    "import_path": None,
                    "model_name": MODEL_NAME,
                    "base_url": None,
                    "model_api_key_name": None,
                    "model_api_format": None,
                    "skip_model_parsing": False,
                    "n_concurrent": None,
                    "concurrency_group": None,
                    "skills": [],
                    "override_timeout_sec": None,
                    "override_setup_timeout_sec": None,
                    "max_timeout_sec": None,
                    "resume_trajectory": False,
                    "load_trajectory": None,
                    "extra_allowed_hosts": [],
                    "kwargs": {},
                    "mcp_servers": [],
                },
                "user_agent": None,
                "environment": {
                    "type": "docker",
                    "import_path": None,
                    "force_build": False,
                    "delete": True,
                    "stream": False,
                    "cpu_enforcement_policy": "auto",
                    "memory_enforcement_policy": "auto",
                    "override_cpus": None,
                    "override_memory_mb": None,
                    "override_storage_mb": None,
                    "override_gpus": None,
                    "override_tpu": None,
                    "mounts": None,
                    "extra_docker_compose": [],
                    "kwargs": {},
                    "extra_allowed_hosts": [],
                },
                "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
                "artifacts": [],
                "extra_instruction_paths": [],
                "extra_instructions": [],
                "job_id": self.run.job_id,
                "source_trial": None,
            },
            "agent_info": {
                "name": AGENT_NAME,
                "version": AGENT_VERSION,
                "model_info": {"name": MODEL_SHORT_NAME, "provider": MODEL_PROVIDER},
            },
            "agent_result": {
                "n_input_tokens": self.prompt_chars // 4,
                "n_cache_tokens": None,
                "n_output_tokens": self.response_chars // 4,
                "cost_usd": None,
                "model_usage": None,
                "rollout_details": None,
                "metadata": None,
            },
            "verifier_result": None if plan.reward is None else {"rewards": {"reward": plan.reward}},
            "verifier_environment_mode": None,
            "exception_info": exception_info,
            "started_at": _timestamp(self.started_at),
            "finished_at": _timestamp(finished_at),
            "environment_setup": None,
            "agent_setup": None,
            "agent_execution": None,
            "verifier": None,
            "step_results": None,
        }

    def _trial_log(self, turns: list[AgentTurn]) -> str:
        clock = self.started_at
        lines = []

        def log(level: str, logger: str, message: str) -> None:
            nonlocal clock
            clock += timedelta(milliseconds=self.rng.randint(50, 40000))
            lines.append(f"{clock:%Y-%m-%d %H:%M:%S},{clock.microsecond // 1000:03} {level:<7} {logger}: {message}")

        log("INFO", "harbor.trial", f"Starting trial {self.plan.trial_name}")
        log("INFO", "harbor.environment", "Building docker environment (cached layers: 11/12)")
        log("INFO", "harbor.environment", "Environment started")
        if self.plan.kind == "no_trajectory":
            log("ERROR", "harbor.agent", "Agent setup failed: installation script exited with status 1")
        for n, turn in enumerate(turns):
            log("DEBUG", "harbor.agent.terminus_2", f"Episode {n}: prompt sent")
            log("DEBUG", "harbor.agent.terminus_2", f"Episode {n}: response of {len(turn.response)} characters")
            log(
                "DEBUG",
                "harbor.environment",
                f"Executed {turn.response.count('keystrokes')} command(s) in tmux session",
            )
        if self.plan.exception is not None:
            log("ERROR", "harbor.trial", f"Agent failed with {self.plan.exception}")
        elif self.plan.reward is not None:
            log("INFO", "harbor.verifier", "Running tests/test.sh")
            log("INFO", "harbor.verifier", f"Reward: {self.plan.reward}")
        if self.plan.kind != "unscored":
            log("INFO", "harbor.trial", f"Trial {self.plan.trial_name} finished")
        return "\n".join(lines) + "\n"

    def _setup_log(self) -> str:
        packages = "\n".join(f"Collecting {package}" for package in self.rng.sample(PACKAGES, 4))
        return f"installing agent\n{packages}\nERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n"

    def _write_verifier(self, counter: WriteCounter) -> None:
        verifier_dir = self.dir / "verifier"
        os.mkdir(verifier_dir)
        counter.write(verifier_dir / "test-stdout.txt", self._test_stdout())
        if self.rng.random() < TEST_STDERR_RATE:
            # Real stderr is not always UTF-8; neither is this.
            counter.write(verifier_dir / "test-stderr.txt", b"warning: deprecated \xff\xfe option\n")
        counter.write(verifier_dir / "reward.txt", f"{self.plan.reward}")

    def _test_stdout(self) -> str:
        count = self.rng.randint(3, 40)
        failed = set() if self.plan.reward == 1.0 else set(self.rng.sample(range(count), self.rng.randint(1, count)))
        lines = [
            "=" * 29 + " test session starts " + "=" * 30,
            "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
            "rootdir: /tests",
            f"collected {count} items",
            "",
        ]
        lines += [f"tests/test_outputs.py::test_case_{i} {'FAILED' if i in failed else 'PASSED'}" for i in range(count)]
        if failed:
            lines.append("=" * 35 + " FAILURES " + "=" * 35)
            for i in sorted(failed)[:5]:
                lines += [
                    f"{'_' * 30} test_case_{i} {'_' * 30}",
                    f"E       AssertionError: assert {self.rng.randint(0, 99)} == {self.rng.randint(100, 199)}",
                    f"tests/test_outputs.py:{10 + 7 * i}: AssertionError",
                ]
        seconds = self.rng.uniform(0.3, 30)
        summary = f"{len(failed)} failed, {count - len(failed)} passed" if failed else f"{count} passed"
        lines.append(f"===== {summary} in {seconds:.2f}s =====")
        return "\n".join(lines) + "\n"


class RunWriter:
    """What every trial of one run shares: where it goes, the job id, the line pool, the options."""

    def __init__(self, out_dir: Path, run_id: str, seed: int, prompt_scale: float, episode_prompts: bool) -> None:
        self.run_id = run_id
        self.seed = seed
        self.prompt_scale = prompt_scale
        self.episode_prompts = episode_prompts
        self.run_dir = out_dir / run_id
        self.trace_jobs = self.run_dir / "trace_jobs"
        rng = random.Random(f"{seed}:{run_id}:run")
        self.job_id = _uuid(rng)
        self.line_pool = _terminal_line_pool(rng)
        self.mean_line_chars = max(1, sum(map(len, self.line_pool)) // len(self.line_pool) + 1)


def generate_run(
    out_dir: Path,
    run_id: str,
    trials: int,
    seed: int = 0,
    prompt_scale: float = 1.0,
    nested_steps: int = 0,
    episode_prompts: bool = True,
) -> dict[str, object]:
    """Write OUT_DIR/RUN/trace_jobs/ with `trials` trials and return the manifest (also in OUT_DIR/RUN/manifest.json).

    `prompt_scale` (0 < s <= 1) keeps that share of each episode's prompt, its most
    recent part; `nested_steps` spreads trials over trace_jobs/step-1..step-K/;
    `episode_prompts=False` leaves out the agent/episode-N/ folders altogether.
    """
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if not 0 < prompt_scale <= 1:
        raise ValueError("prompt_scale must be in (0, 1]")
    if nested_steps < 0:
        raise ValueError("nested_steps must not be negative")
    run = RunWriter(Path(out_dir), run_id, seed, prompt_scale, episode_prompts)
    if run.run_dir.exists() and any(run.run_dir.iterdir()):
        raise FileExistsError(f"{run.run_dir} is not empty; generate into a fresh folder")
    plans = plan_trials(run_id, trials, seed, nested_steps)
    totals = WriteCounter()
    for plan in plans:
        written = TrialWriter(plan, run).write()
        totals.files += written.files
        totals.bytes += written.bytes
    kinds: dict[str, int] = {}
    secrets: dict[str, int] = {}
    for plan in plans:
        kinds[plan.kind] = kinds.get(plan.kind, 0) + 1
        if plan.secret is not None:
            secrets[plan.secret] = secrets.get(plan.secret, 0) + 1
    manifest = {
        "run_id": run_id,
        "seed": seed,
        "n_trials": trials,
        "prompt_scale": prompt_scale,
        "nested_steps": nested_steps,
        "episode_prompts": episode_prompts,
        "job_id": run.job_id,
        "counts": {
            "kinds": dict(sorted(kinds.items())),
            "secrets": dict(sorted(secrets.items())),
            "agent_steps": sum(plan.n_agent_steps for plan in plans),
            "files": totals.files,
            "bytes": totals.bytes,
        },
        "trials": [
            {
                "trial_name": plan.trial_name,
                "task": plan.task,
                "kind": plan.kind,
                "reward": plan.reward,
                "secret": plan.secret,
                "dir": "/".join(part for part in ("trace_jobs", plan.step_folder, plan.trial_name) if part),
                "n_agent_steps": plan.n_agent_steps,
                "exception": plan.exception,
            }
            for plan in plans
        ],
    }
    (run.run_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def inflate_trajectories(run_dir: Path, megabytes: float) -> int:
    """Grow every trial's agent/trajectory.json to about `megabytes` MB, repeating its middle steps
    (a very long trial), for the memory measure; returns the trajectories grown."""
    grown = 0
    for path in sorted(Path(run_dir).glob("trace_jobs/**/agent/trajectory.json")):
        data = json.loads(path.read_bytes())
        steps = data["steps"]
        middle = steps[1:-1] or steps
        size = len(path.read_bytes())
        copies = max(0, int(megabytes * 1e6 / max(1, sum(len(json.dumps(s)) for s in middle))))
        if copies and size < megabytes * 1e6:
            data["steps"] = [steps[0], *(middle * copies), *steps[1:]]
            for index, step in enumerate(data["steps"], start=1):
                data["steps"][index - 1] = {**step, "step_id": index}
            path.write_text(json.dumps(data))
            grown += 1
    return grown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="the run goes to OUT_DIR/RUN/trace_jobs/")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--trials", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--prompt-scale",
        type=float,
        default=1.0,
        help="share (0-1] of each episode prompt to keep; 1 matches real runs (~0.85 MB per trial)",
    )
    parser.add_argument("--nested-steps", type=int, default=0, help="spread trials over trace_jobs/step-1..K/")
    parser.add_argument(
        "--episode-prompts",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write agent/episode-N/{prompt.txt,response.txt,debug.json}",
    )
    parser.add_argument(
        "--trajectory-mb", type=float, help="grow each agent/trajectory.json to about this many MB (memory tests)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    manifest = generate_run(
        args.out_dir,
        args.run_id,
        args.trials,
        seed=args.seed,
        prompt_scale=args.prompt_scale,
        nested_steps=args.nested_steps,
        episode_prompts=args.episode_prompts,
    )
    if args.trajectory_mb:
        inflate_trajectories(args.out_dir / args.run_id, args.trajectory_mb)
    seconds = time.perf_counter() - started
    counts = manifest["counts"]
    print(
        f"{args.trials} trials, {counts['files']} files, {counts['bytes'] / 2**20:.1f} MiB "
        f"({counts['bytes'] / args.trials / 1e6:.3f} MB/trial) in {seconds:.1f}s "
        f"({args.trials / max(seconds, 1e-9):.0f} trials/s): {args.out_dir / args.run_id / 'manifest.json'}",
        file=sys.stderr,
    )
    print(json.dumps(counts["kinds"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
