"""The records of benchmarks/assignment_holdout.py, deterministic for a seed: credentials planted by
assignment and the negatives beside them (that benchmark's docstring says what each holds). Here so the
unit tests can check the instrument without importing the benchmark."""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

from trace_assets_tests.support.assignment_names import NAMES_FILE, credential_word, words

DATA = Path(__file__).resolve().parent.parent / "data" / "secrets"
HOLDOUT_SEED = DATA / "assignment_holdout_seed"  # one line: an integer drawn once, never printed
TUNED_SEED = 46
POSITIVES_PER_FRAMING = 24
NEGATIVES_PER_CLASS = 30

# The names, then ours: the tuned split's credential names.
TUNED_CREDENTIAL_NAMES = [
    *("GENERIC_TOKEN", "MYCOMPANY_API_TOKEN", "api_token", "token", "INTERNAL_SERVICE_KEY", "genericToken"),
    *("generic_token", "SENTRY_TOKEN", "DB_PASSWORD", "client_secret"),
    *("ACME_SECRET_KEY", "BILLING_API_KEY", "webhookSecret", "REDIS_PASSWORD", "service-account-token"),
    *("ADMIN_PASS", "LDAP_BIND_PWD", "ORDERS_DB_PASSWD", "SIGNING_KEY", "auth_token", "refreshToken"),
    *("PAYMENTS_PRIVATE_KEY", "SMTP_CREDENTIALS", "deploy.key", "MONITORING_APIKEY", "SESSION_SECRET"),
    *("registryPassword", "BROKER_AUTH_TOKEN", "vault-token", "CI_JOB_SECRET", "ENCRYPTION_PASSPHRASE"),
]
# Ours: the tuned split's settings, the examples among them.
TUNED_SETTING_NAMES = [
    *("PORT", "NODE_ENV", "DATABASE_HOST", "LOG_LEVEL", "MAX_TOKENS", "TOKEN_TTL", "KEY_ALGORITHM"),
    *("SECRET_NAME", "SECRET_BACKEND", "COMMIT_SHA", "TRACE_ID", "REQUEST_ID", "AUTH_TYPE", "access_token_url"),
    *("PYTHONUNBUFFERED", "WORKERS", "CACHE_DIR", "API_BASE_URL", "REDIS_HOST", "featureFlagsEnabled"),
    *("max_retries", "upload-limit", "TIMEOUT_SECONDS", "PASSWORD_MIN_LENGTH", "SESSION_TOKEN_LIFETIME"),
    *("jwtAlgorithm", "AUTH_METHOD", "TOKEN_ENDPOINT", "oauth_authorize_url", "secretStoreRef", "CREDENTIALS_PATH"),
    *("existingSecret", "BUILD_ID", "run_id", "imageDigest", "SPAN_ID", "DEPLOYMENT_UUID", "GIT_COMMIT"),
    *("SECRET_KEY_ENABLED", "API_KEY_HEADER", "PASSWORD_HASH_SCHEME", "keySize", "tokenCacheSize"),
]

Pair = tuple[tuple[str, ...], str]  # a name's words and the value assigned to it
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
SYMBOLS = "!%^*-_.~+"
URL_SYMBOLS = "-_.~!*"


# --- names in each framing's case -------------------------------------------------------------------


def screaming(w: tuple[str, ...]) -> str:
    return "_".join(p.upper() for p in w)


def snake(w: tuple[str, ...]) -> str:
    return "_".join(w)


def camel(w: tuple[str, ...]) -> str:
    return w[0] + "".join(p.capitalize() for p in w[1:])


def kebab(w: tuple[str, ...]) -> str:
    return "-".join(w)


def dotted(w: tuple[str, ...]) -> str:
    return ".".join(w)


def train(w: tuple[str, ...]) -> str:
    return "-".join(p.capitalize() for p in w)


# --- values -----------------------------------------------------------------------------------------


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(rng: random.Random, urlsafe: bool) -> str:
    raw = rng.randbytes(rng.randint(9, 48))
    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
    return text.rstrip("=") if urlsafe and rng.random() < 0.5 else text


def _uuid(rng: random.Random) -> str:
    text = str(uuid.UUID(bytes=rng.randbytes(16), version=4))
    return text.upper() if rng.random() < 0.3 else text


def _password(rng: random.Random, symbols: str) -> str:
    n = rng.randint(12, 40)
    chars = [rng.choice(B62) for _ in range(n - 3)] + [
        rng.choice(symbols),
        rng.choice(symbols),
        rng.choice(string.digits),
    ]
    rng.shuffle(chars)
    return "".join(chars)


# Six shapes a generated credential takes; `url_safe` leaves out what a URL or a command would escape.
VALUE_SHAPES: dict[str, Callable[[random.Random, bool], str]] = {
    "base62": lambda r, url_safe: _rand(r, B62, r.randint(12, 64)),
    "base64": lambda r, url_safe: _b64(r, urlsafe=url_safe),
    "base64url": lambda r, url_safe: _b64(r, urlsafe=True),
    "hex": lambda r, url_safe: _rand(r, HEX, 2 * r.randint(16, 32)),
    "uuid": lambda r, url_safe: _uuid(r),
    "password": lambda r, url_safe: _password(r, URL_SYMBOLS if url_safe else SYMBOLS),
}


def secret_value(rng: random.Random, url_safe: bool = False) -> str:
    return VALUE_SHAPES[rng.choice(sorted(VALUE_SHAPES))](rng, url_safe)


COUNT_TAILS = frozenset(
    "ttl max min size length len limit timeout seconds minutes hours days lifetime expiry expires expiration "
    "age count interval tokens bytes retries workers concurrency threads replicas".split()
)
ENUM_VALUES = {
    "algorithm": ["RS256", "HS256", "ES256", "aes-256-gcm", "sha256"],
    "alg": ["RS256", "HS512", "EdDSA"],
    "type": ["oauth2", "basic", "bearer", "jwt", "ldap", "none", "api_key"],
    "method": ["client_secret_basic", "client_secret_post", "scram-sha-256", "md5", "trust", "plain"],
    "methods": ["password,webauthn", "GET,POST"],
    "mode": ["strict", "permissive", "disabled", "required", "verify-full"],
    "provider": ["google", "github", "okta", "s3", "local", "keycloak"],
    "scheme": ["https", "BLF-CRYPT", "SSHA512", "bcrypt"],
    "format": ["json", "pem", "text", "logfmt"],
    "strategy": ["jwt", "database", "RollingUpdate"],
    "header": ["X-API-Key", "Authorization", "X-Auth-Token"],
}
ENUM_TAILS = frozenset(ENUM_VALUES)
SECRET_NAME_TAILS = frozenset("name names ref store backend path file files filename mount source dir".split())
URL_TAILS = frozenset("url uri urls endpoint issuer".split())
ID_TAILS = frozenset("id ids sha hash uuid digest commit revision".split())
SECRET_NAME_VALUES = [
    "prod/db/credentials",
    "aws-secretsmanager",
    "my-release-postgresql",
    "/run/secrets/db_password",
    "vault",
    "kv/data/app/config",
    "app-credentials",
    "projects/acme/secrets/api/versions/latest",
    "/etc/app/secrets.env",
    "sealed-secrets",
]


def benign_value(w: tuple[str, ...], rng: random.Random) -> str:
    """A realistic value for a setting, chosen by its words (a port, host, path, URL, switch, count, ...)."""
    last, every = w[-1], set(w)
    if last in {"port", "ports"}:
        return str(rng.choice([80, 443, 3000, 5432, 6379, 8080, 9000, 25, 587]))
    if last in {"host", "hostname", "server", "address", "addr"}:
        return rng.choice(["db.internal", "localhost", "redis", "0.0.0.0", "postgres", "smtp.mailgun.org"])
    if last in URL_TAILS:
        return rng.choice(["https://api.example.com/v1", "http://localhost:3000", "redis://redis:6379/0"])
    if last in SECRET_NAME_TAILS or last in {"folder", "root", "home", "cert"}:
        return rng.choice(["/var/lib/app/data", "./data", "/etc/ssl/certs/ca.pem", "uploads", "my-app"])
    if last in COUNT_TAILS or w[0] in {"max", "min", "num"}:
        return str(rng.choice([4096, 3600, 30, 100, 86400, 8, 5, 1024, 600]))
    if last in ENUM_TAILS:
        return rng.choice(ENUM_VALUES[last])
    if last in ID_TAILS:
        return rng.choice(["1", "main", "default"])
    if last in {"level", "levels"}:
        return rng.choice(["info", "debug", "warn"])
    if last in {"env", "environment", "stage"}:
        return rng.choice(["production", "development", "staging"])
    if last == "region":
        return rng.choice(["us-east-1", "eu-west-1", "auto"])
    if last in {"email", "from", "sender"}:
        return "noreply@example.com"
    if last in {"user", "username", "login", "owner"}:
        return rng.choice(["admin", "postgres", "app"])
    if last in {"version", "tag"}:
        return rng.choice(["1.4.2", "latest", "v2", "16-alpine"])
    if every & {"enabled", "enable", "disabled", "disable", "debug", "allow", "skip", "use", "force"}:
        return rng.choice(["true", "false", "1", "0"])
    return rng.choice(["true", "false", "1", "0", "default", "info", "en", "UTC", "json", "30", "none", "public"])


def id_value(rng: random.Random) -> str:
    return rng.choice(
        [
            lambda: _rand(rng, HEX, 40),
            lambda: _uuid(rng),
            lambda: _rand(rng, HEX, 32),
            lambda: _rand(rng, HEX, 64),
            lambda: _rand(rng, HEX, 24),
        ]
    )()


# --- framings ---------------------------------------------------------------------------------------

# A framing renders pairs (name words, value) in its syntax, the planted one at `at`; single-value
# framings (a header, a flag, a URL) render the planted value alone inside benign lines of their own.
Framing = Callable[[random.Random, list[Pair], int], str]


def _env(case: Callable[[tuple[str, ...]], str], fmt: str, header: str) -> Framing:
    def frame(rng: random.Random, pairs: list[Pair], at: int) -> str:
        return header + "\n" + "\n".join(fmt.format(n=case(w), v=v) for w, v in pairs)

    return frame


def _yaml_nested(rng: random.Random, pairs: list[Pair], at: int) -> str:
    lines = ["$ cat config/values.yaml", "app:", "  server:", "    replicas: 2", "  settings:"]
    lines += [f"    {camel(w)}: {v}" if v else f"    {camel(w)}:" for w, v in pairs]
    return "\n".join(lines)


def _json_doc(pairs: list[Pair], case: Callable[[tuple[str, ...]], str]) -> dict:
    return {case(w): v for w, v in pairs}


def _json_flat(rng: random.Random, pairs: list[Pair], at: int) -> str:
    case = rng.choice([snake, camel])
    return "$ cat config.json\n" + json.dumps(_json_doc(pairs, case), indent=2)


def _json_nested(rng: random.Random, pairs: list[Pair], at: int) -> str:
    doc = {"service": {"name": "api", "integrations": {"settings": _json_doc(pairs, camel)}}}
    return "$ cat settings.json\n" + json.dumps(doc, indent=rng.choice([None, 2]))


def _json_tool_result(rng: random.Random, pairs: list[Pair], at: int) -> str:
    inner = json.dumps({"config": _json_doc(pairs, snake)})
    return json.dumps({"tool_call_id": f"call_{rng.randrange(10**6)}", "output": inner, "exit_code": 0})


def _toml(rng: random.Random, pairs: list[Pair], at: int) -> str:
    body = "\n".join(f'{snake(w)} = "{v}"' for w, v in pairs)
    return f'$ cat pyproject.toml\n[tool.app]\nname = "api"\n\n[tool.app.settings]\n{body}'


def _ini(rng: random.Random, pairs: list[Pair], at: int) -> str:
    body = "\n".join(f"{snake(w)} = {v}" for w, v in pairs)
    return f"$ cat setup.cfg\n[service]\n{body}"


def _python_environ(rng: random.Random, pairs: list[Pair], at: int) -> str:
    body = "\n".join(f'os.environ["{screaming(w)}"] = "{v}"' for w, v in pairs)
    return f"$ cat conftest.py\nimport os\n\n{body}\n"


def _python_kwarg(rng: random.Random, pairs: list[Pair], at: int) -> str:
    w, v = pairs[at]
    return f'$ python -c \'...\'\n>>> client = Client(base_url="https://api.internal", {snake(w)}="{v}", timeout=30)'


def _shell_prefix(rng: random.Random, pairs: list[Pair], at: int) -> str:
    w, v = pairs[at]
    command = rng.choice(["psql -h db -U app -c 'select 1'", "./deploy.sh --env prod", "npm run migrate"])
    return f"root@sandbox:/app# {screaming(w)}={v} {command}\n(1 row)"


def _flag_space(rng: random.Random, pairs: list[Pair], at: int) -> str:
    w, v = pairs[at]
    return f"$ ./bin/sync --host api.internal --{kebab(w)} {v} --verbose\nsynced 12 items"


def _flag_equals(rng: random.Random, pairs: list[Pair], at: int) -> str:
    w, v = pairs[at]
    return f"$ cli login --user admin --{kebab(w)}={v}\nLogged in."


def _login_p(rng: random.Random, pairs: list[Pair], at: int) -> str:
    v = pairs[at][1]
    return f"$ docker login registry.internal -u deploy -p {v}\nLogin Succeeded"


def _mysql_p(rng: random.Random, pairs: list[Pair], at: int) -> str:
    v = pairs[at][1]
    return f"$ mysql -h db -uroot -p{v} app -e 'show tables'\n+----------------+\n| Tables_in_app  |"


def _netrc(rng: random.Random, pairs: list[Pair], at: int) -> str:
    v = pairs[at][1]
    return (
        f"$ cat ~/.netrc\nmachine api.internal.example login deploy password {v}\nmachine files.example login anonymous"
    )


def _header_named(rng: random.Random, pairs: list[Pair], at: int) -> str:
    w, v = pairs[at]
    name = rng.choice([f"X-{train(w)}", "X-Api-Key"])
    return f"> GET /v1/items HTTP/1.1\n> Host: api.internal\n> {name}: {v}\n> Accept: */*"


def _header_auth(scheme: str) -> Framing:
    def frame(rng: random.Random, pairs: list[Pair], at: int) -> str:
        v = pairs[at][1]
        return f"> POST /v1/jobs HTTP/1.1\n> Host: api.internal\n> Authorization: {scheme} {v}\n> Content-Type: application/json"

    return frame


def _url_query(rng: random.Random, pairs: list[Pair], at: int) -> str:
    w, v = pairs[at]
    param = rng.choice([snake(w), "access_token", "token", "key", "sig"])
    first = rng.random() < 0.5
    query = f"?{param}={v}&page=2" if first else f"?page=2&{param}={v}"
    return f"$ curl -s 'https://api.internal.example/v2/items{query}'\n{{\"items\": []}}"


def _conn_url(rng: random.Random, pairs: list[Pair], at: int) -> str:
    v = pairs[at][1]
    scheme = rng.choice(["postgres", "postgresql", "mysql", "mongodb", "redis", "amqp"])
    return f"Connecting to {scheme}://app:{v}@db.internal:5432/app\nconnected"


def _conn_ado(rng: random.Random, pairs: list[Pair], at: int) -> str:
    v = pairs[at][1]
    return f"ConnectionStrings__Default=Server=db.internal;Database=app;User Id=sa;Password={v};TrustServerCertificate=True"


# name -> (framing, its value must survive a URL or a command unquoted, it takes the planted pair's
# name; the others are single-value framings whose name is fixed by their syntax)
FRAMINGS: dict[str, tuple[Framing, bool]] = {
    "NAME=value": (_env(screaming, "{n}={v}", "$ env | sort"), True),
    'export NAME="value"': (_env(screaming, 'export {n}="{v}"', "$ cat .envrc"), False),
    ".env, single quotes": (_env(screaming, "{n}='{v}'", "$ cat .env"), False),
    ".env, double quotes": (_env(screaming, '{n}="{v}"', "$ cat .env.local"), False),
    "YAML name: value": (_env(snake, "{n}: {v}", "$ cat config.yaml"), False),
    "YAML nested": (_yaml_nested, False),
    "JSON depth 1": (_json_flat, False),
    "JSON deeper": (_json_nested, False),
    "JSON escaped in a tool result": (_json_tool_result, False),
    'TOML name = "value"': (_toml, False),
    "INI name = value": (_ini, False),
    "properties a.b.name=value": (_env(dotted, "app.{n}={v}", "$ cat application.properties"), False),
    'os.environ["NAME"] = "value"': (_python_environ, False),
    'keyword argument name="value"': (_python_kwarg, False),
    "shell prefix NAME=value cmd": (_shell_prefix, True),
    "--flag value": (_flag_space, True),
    "--flag=value": (_flag_equals, True),
    "login user -p value": (_login_p, True),
    "mysql -uroot -pVALUE": (_mysql_p, True),
    ".netrc": (_netrc, True),
    "X-Api-Key: value": (_header_named, False),
    "Authorization: Token": (_header_auth("Token"), False),
    "Authorization: Bearer": (_header_auth("Bearer"), False),
    "Authorization: Basic": (_header_auth("Basic"), False),
    "URL query parameter": (_url_query, True),
    "URL user:value@host": (_conn_url, True),
    "ADO Password=value;": (_conn_ado, True),
}
# The framings negatives are printed in: those that assign a value to a name.
ASSIGNING = [
    "NAME=value",
    'export NAME="value"',
    ".env, single quotes",
    ".env, double quotes",
    "YAML name: value",
    "YAML nested",
    "JSON depth 1",
    "JSON deeper",
    "JSON escaped in a tool result",
    'TOML name = "value"',
    "INI name = value",
    'os.environ["NAME"] = "value"',
]
EMPTY_THEN_BENIGN = ["NAME=value", 'export NAME="value"', ".env, double quotes", "YAML name: value", "INI name = value"]


# --- records ----------------------------------------------------------------------------------------


class Names:
    """One split's names: credential names, and setting names sorted into the negative classes' pools."""

    def __init__(self, credential: list[str], setting: list[str]) -> None:
        self.credential = [words(n) for n in credential]
        settings = [words(n) for n in setting]

        def has_credential_word(w: tuple[str, ...]) -> bool:
            return any(credential_word(p) for p in w)

        self.benign = [w for w in settings if w[-1] not in ID_TAILS]  # `SECRET_KEY_ENABLED=true` among them
        self.surround = [w for w in self.benign if not has_credential_word(w)]  # the lines around a planted one
        self.counts = [w for w in settings if w[-1] in COUNT_TAILS or w[0] in {"max", "min", "num"}]
        self.enums = [w for w in settings if w[-1] in ENUM_TAILS]
        self.secret_names = [
            w for w in settings if has_credential_word(w) and (w[-1] in SECRET_NAME_TAILS or w[0] == "existing")
        ]
        self.urls = [w for w in settings if has_credential_word(w) and w[-1] in URL_TAILS]
        self.ids = [w for w in settings if w[-1] in ID_TAILS]


def tuned_names() -> Names:
    return Names(TUNED_CREDENTIAL_NAMES, TUNED_SETTING_NAMES)


def held_out_names() -> Names:
    data = json.loads(NAMES_FILE.read_text())
    return Names([e["name"] for e in data["credential_names"]], [e["name"] for e in data["setting_names"]])


def held_out_seed() -> int:
    return int(HOLDOUT_SEED.read_text().strip())


def _reference(rng: random.Random, w: tuple[str, ...]) -> str:
    n = screaming(w)
    return rng.choice(
        [
            f"${{{n}}}",
            f"${n}",
            f"$(cat /run/secrets/{snake(w)})",
            f"${{{{ secrets.{n} }}}}",
            f"process.env.{n}",
            f"os.environ['{n}']",
            f"{{{{ .Values.{camel(w)} }}}}",
        ]
    )


PLACEHOLDERS = [
    "changeme",
    "your-api-key-here",
    "<token>",
    "xxxxxxxx",
    "<your-secret>",
    "REPLACE_ME",
    "your_password",
    "CHANGE_ME_PLEASE",
]
MASKS = ["****", "********", "####", "########", "[hidden]", "***REDACTED***", "••••••••"]
PLACEHOLDER_LOGINS = ["dXNlcjpwYXNz", "dXNlcjpwYXNzd29yZA==", "YWRtaW46YWRtaW4=", "dXNlcm5hbWU6cGFzc3dvcmQ="]


def _negative_pair(cls: str, names: Names, rng: random.Random) -> Pair:
    """The planted pair of one negative record of class `cls`."""
    if cls == "setting, benign value":
        w = rng.choice(names.benign)
        return w, benign_value(w, rng)
    if cls == "count or size":
        w = rng.choice(names.counts)
        return w, str(rng.choice([4096, 3600, 30, 100, 86400, 8192, 128000, 600, 12, 65536]))
    if cls == "enum word":
        w = rng.choice(names.enums)
        return w, rng.choice(ENUM_VALUES[w[-1]])
    if cls == "reference":
        w = rng.choice(names.credential)
        return w, _reference(rng, w)
    if cls == "masked":
        return rng.choice(names.credential), rng.choice(MASKS)
    if cls == "placeholder":
        return rng.choice(names.credential), rng.choice(PLACEHOLDERS)
    if cls == "placeholder login, base64":
        return rng.choice(names.credential), rng.choice(PLACEHOLDER_LOGINS)
    if cls == "name of a secret":
        return rng.choice(names.secret_names), rng.choice(SECRET_NAME_VALUES)
    if cls == "URL after a credential word":
        host = rng.choice(["auth.example.com", "login.internal", "github.com", "accounts.google.com"])
        path = rng.choice(
            ["/oauth/access_token", "/oauth2/token", "/o/oauth2/auth", "/realms/app/protocol/openid-connect/token"]
        )
        return rng.choice(names.urls), f"https://{host}{path}"
    if cls == "id, hex or UUID":
        return rng.choice(names.ids), id_value(rng)
    raise ValueError(cls)


NEGATIVE_CLASSES = [
    "setting, benign value",
    "count or size",
    "enum word",
    "reference",
    "masked",
    "placeholder",
    "placeholder login, base64",
    "name of a secret",
    "URL after a credential word",
    "id, hex or UUID",
    "empty, then a benign line",
]


def _surrounded(rng: random.Random, names: Names, planted: Pair) -> tuple[list[Pair], int]:
    """The planted pair among one to three benign settings (before and after it)."""
    before = [(w, benign_value(w, rng)) for w in rng.sample(names.surround, rng.randint(0, 2))]
    after = [(w, benign_value(w, rng)) for w in rng.sample(names.surround, rng.randint(1, 2))]
    return [*before, planted, *after], len(before)


def records(names: Names, seed: int) -> list[dict]:
    """Every framing's positives and every class's negatives for one split, deterministic in `seed`."""
    rng = random.Random(seed)
    out = []
    for framing, (frame, url_safe) in FRAMINGS.items():
        for _ in range(POSITIVES_PER_FRAMING):
            w = rng.choice(names.credential)
            value = secret_value(rng, url_safe)
            if framing == "Authorization: Basic":
                login = f"{rng.choice(['deploy', 'ci', 'svc-backup', 'admin'])}:{secret_value(rng, True)}"
                value = base64.b64encode(login.encode()).decode()
            pairs, at = _surrounded(rng, names, (w, value))
            text = frame(rng, pairs, at)
            out.append({"positive": True, "group": framing, "name": snake(w), "value": value, "text": text})
    for cls in NEGATIVE_CLASSES:
        for _ in range(NEGATIVES_PER_CLASS):
            if cls == "empty, then a benign line":
                framing = rng.choice(EMPTY_THEN_BENIGN)
                follower = rng.choice(names.surround)
                pairs = [(rng.choice(names.credential), ""), (follower, benign_value(follower, rng))]
                before = [(w, benign_value(w, rng)) for w in rng.sample(names.surround, rng.randint(0, 1))]
                pairs, at = [*before, *pairs], len(before)
            else:
                # A placeholder login is as often sent as a header: `Authorization: Basic dXNlcjpwYXNz`.
                header = cls == "placeholder login, base64" and rng.random() < 0.3
                framing = "Authorization: Basic" if header else rng.choice(ASSIGNING)
                pairs, at = _surrounded(rng, names, _negative_pair(cls, names, rng))
            text = FRAMINGS[framing][0](rng, pairs, at)
            out.append({"positive": False, "group": cls, "framing": framing, "name": snake(pairs[at][0]), "text": text})
    return out
