"""`mcptape bundle`: one zip with the tapes, their JSON, the report, the HAR, the findings and a README; every
command that reads a tape reads the bundle as it is; a bundle from a stranger is read, never extracted, within
bounds; a tape that holds a secret is refused; no canary secret reaches a report, an export or a bundle."""

from __future__ import annotations

import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import anyio
import pytest

from mcptape.demo.client import script
from mcptape.replay import replaying
from mcptape.tape import records
from mcptape.tape.file import read

from .conftest import MCPTAPE, run_mcptape, write_tape
from .test_cli import one_line_error
from .test_redact import GITHUB, JWT
from .test_redaction import client_secrets, record_session, secret_server, server_secrets  # noqa: F401 (a fixture)

API_KEY = "canary-api-key-7f3a9c2e5b1d"  # a value under a sensitive key: no shape, only its key says it is secret
CANARIES = (GITHUB, JWT, API_KEY, "sk-live-canary-0123456789abcdef")


def bundle(*args: str) -> subprocess.CompletedProcess:
    result = run_mcptape("bundle", *args)
    assert result.returncode == 0, result.stderr
    return result


def members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def test_a_bundle_holds_everything_and_every_command_reads_it(real_tapes, tmp_path):
    tape = real_tapes["edited"]
    bug = tmp_path / "bug.zip"
    done = bundle(tape, "-o", str(bug))
    assert done.stdout == "" and "wrote" in done.stderr
    inside = members(bug)
    assert sorted(inside) == ["README.md", "findings.json", "json/edited.json", "report.har", "report.html",
                              "report.md", "tapes/edited.mcptape"]
    assert inside["tapes/edited.mcptape"] == Path(tape).read_bytes()  # the tape as it was: it held no secret
    assert json.loads(inside["json/edited.json"]) == json.loads(run_mcptape("export", tape, "--format", "json").stdout)
    findings = json.loads(inside["findings.json"])
    assert sorted(f["rule"] for f in findings["findings"]) == ["dead-session-reuse", "no-reinitialize"]
    assert {f["tape"] for f in findings["findings"]} == {"tapes/edited.mcptape"}  # no work folder's path
    assert json.loads(inside["report.har"])["log"]["entries"]
    readme = inside["README.md"].decode()
    assert "mcptape replay bug.zip/tapes/edited.mcptape" in readme and "mcptape check bug.zip" in readme
    md = inside["report.md"].decode()
    assert "```mermaid" in md and "tapes/edited.mcptape" in md and str(tmp_path) not in md and "/tmp/" not in md

    # every command that reads a tape reads the bundle
    member = f"{bug}/tapes/edited.mcptape"
    shown = run_mcptape("show", str(bug))
    assert shown.returncode == 0 and shown.stdout == run_mcptape("show", tape).stdout
    assert run_mcptape("show", member).stdout == shown.stdout
    checked = run_mcptape("check", str(bug), "--format", "json")
    assert checked.returncode == 1
    assert {f["tape"] for f in json.loads(checked.stdout)["findings"]} == {member}
    assert run_mcptape("diff", str(bug), tape).stdout.strip() == "no differences"
    assert run_mcptape("export", str(bug), "--format", "jsonl").stdout == run_mcptape("show", tape, "--format",
                                                                                      "jsonl").stdout
    assert json.loads(run_mcptape("report", str(bug), "--format", "json").stdout)["summary"]["error"] == 2
    edits = run_mcptape("edits", str(bug), "--edit", "drop at=tools/call#1")
    assert edits.returncode == 0 and "drop" in edits.stdout
    with replaying(str(tmp_path / "bug.zip"), log=str(tmp_path / "log.mcptape")) as url:
        lines = anyio.run(script, url, "legacy")
    assert lines[:3] == ["protocol 2025-11-25", "tools add,announce,countdown,greet,reconnect,reply,sleep,start_thread",
                         'add {"result": 5}']


def test_several_tapes_in_one_bundle(real_tapes, tmp_path):
    bug = tmp_path / "two.zip"
    bundle(real_tapes["stdio"], real_tapes["session"], "-o", str(bug))
    inside = members(bug)
    assert [n for n in inside if n.startswith("tapes/")] == ["tapes/stdio.mcptape", "tapes/session.mcptape"]
    har = json.loads(inside["report.har"])  # the HTTP tape's exchanges; the stdio tape has none
    assert {e["request"]["url"].rsplit("/", 1)[1] for e in har["log"]["entries"]} == {"mcp"}
    one_line_error(run_mcptape("show", str(bug)), f"{bug} holds 2 tapes; name one: {bug}/tapes/stdio.mcptape")
    assert "stdio#1" in run_mcptape("show", f"{bug}/tapes/stdio.mcptape").stdout
    report = json.loads(run_mcptape("report", str(bug), "--format", "json").stdout)
    assert [t["path"] for t in report["tapes"]] == [f"{bug}/tapes/stdio.mcptape", f"{bug}/tapes/session.mcptape"]
    assert {s["transport"] for s in report["sessions"]} == {"stdio", "streamable-http"}
    one_line_error(run_mcptape("show", f"{bug}/tapes/other.mcptape"), "holds no tapes/other.mcptape")
    one_line_error(run_mcptape("bundle", real_tapes["stdio"], "-o", str(bug)), "already exists")
    bundle(real_tapes["stdio"], "-o", str(bug), "--force")
    assert "report.har" not in members(bug)  # a stdio tape alone has no HTTP to put in a HAR
    before = bug.read_bytes()
    one_line_error(run_mcptape("record", "--append", "-o", str(bug), "--", "true"), "is a bundle (a zip file)")
    assert bug.read_bytes() == before


def _zip(path: Path, files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> str:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return str(path)


def test_a_strangers_bundle_is_read_within_bounds_and_never_extracted(real_tapes, tmp_path):
    tape = Path(real_tapes["stdio"]).read_bytes()
    work = tmp_path / "work"
    scratch = tmp_path / "tmp"
    work.mkdir()
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([MCPTAPE, *args], capture_output=True, text=True, timeout=60, cwd=work, env=env)

    slip = _zip(tmp_path / "slip.zip", {"../../evil.mcptape": tape, "/abs/evil.mcptape": tape,
                                        "tapes/../../evil.mcptape": tape})
    one_line_error(run("show", slip), "a zip file with no tapes under tapes/")
    one_line_error(run("show", f"{slip}/tapes/../../evil.mcptape"), "is not a tape of the bundle")
    one_line_error(run("check", slip), "a zip file with no tapes under tapes/")
    bomb = _zip(tmp_path / "bomb.zip", {"tapes/bomb.mcptape": tape[:8] + bytes(64 << 20)})
    one_line_error(run("show", bomb), "a zip bomb, not a tape")
    not_zip = tmp_path / "fake.zip"
    not_zip.write_bytes(b"PK\x03\x04 but nothing else")
    one_line_error(run("show", str(not_zip)), "not a readable bundle")
    good = _zip(tmp_path / "good.zip", {"tapes/a.mcptape": tape})
    stored = _zip(tmp_path / "stored.zip", {"tapes/a.mcptape": tape}, compression=zipfile.ZIP_STORED)
    raw = bytearray(Path(stored).read_bytes())
    raw[raw.index(b"MCPTAPE") + 200] ^= 0xFF  # a byte of the tape flipped inside the archive
    Path(stored).write_bytes(bytes(raw))
    one_line_error(run("show", stored), "corrupt record at byte")  # the tape's own checksum says so first
    raw = bytearray(Path(good).read_bytes())
    directory = raw.index(b"PK\x01\x02")
    raw[directory + 16] ^= 0xFF  # the archive's checksum of the member, wrong: zipfile finds out at its end
    Path(tmp_path / "crc.zip").write_bytes(bytes(raw))
    one_line_error(run("show", str(tmp_path / "crc.zip")), "the bundle is damaged at byte")
    assert run("show", good).returncode == 0 and run("check", good).returncode == 0
    assert sorted(os.listdir(work)) == [] and sorted(os.listdir(scratch)) == []  # nothing was written anywhere


def _secret_tape(path) -> str:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "login", "arguments": {
        "apiKey": API_KEY, "note": f"use {GITHUB} or {CANARIES[3]}"}}}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": f"token {JWT}"}]}}
    return write_tape(path, [
        records.capture_start(0.0, "t", {"modes": ["reverse:http://127.0.0.1:9"]}, {}),
        records.http_request(1.0, 0, 0, "POST", "/mcp", [["key", API_KEY]],
                             [["Host", "127.0.0.1:9"], ["Accept", "application/json, text/event-stream"],
                              ["Authorization", f"Bearer {GITHUB}"]], None, None, True,
                             {"msg": msg}),
        records.http_response(1.1, 0, 200, "OK", [["content-type", "application/json"]], None, {"msg": answer}),
        records.end(1.2, 0, records.COMPLETE),
    ])


def _canaries_in(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [c for c in CANARIES if c in text]


def test_a_tape_holding_a_secret_is_refused_unless_told(tmp_path):
    tape = _secret_tape(tmp_path / "secret.mcptape")
    assert len(_canaries_in(Path(tape).read_bytes())) == 4
    bug = tmp_path / "bug.zip"
    refused = run_mcptape("bundle", tape, "-o", str(bug))
    one_line_error(refused, "the tapes still hold")
    assert re.search(r"secret\.mcptape#1 /\S+ \([a-z-]+\); --redact", refused.stderr) and not bug.exists()
    assert _canaries_in(refused.stderr) == []  # the refusal says where, never what

    bundle(tape, "-o", str(bug), "--redact")
    inside = members(bug)
    assert {n: _canaries_in(d) for n, d in inside.items()} == {n: [] for n in inside}
    assert run_mcptape("check", str(bug), "--require-redacted").returncode == 0
    assert "<redacted:" in inside["tapes/secret.mcptape"].decode("utf-8", "replace")

    allowed = bundle(tape, "-o", str(bug), "--force", "--allow-secrets")
    assert "warning: --allow-secrets" in allowed.stderr
    assert members(bug)["tapes/secret.mcptape"] == Path(tape).read_bytes()


def _everything(tape: str, folder: Path) -> dict[str, str | bytes]:
    """Every report format, every export and every file of a bundle of a tape."""
    outputs: dict[str, str | bytes] = {}
    for fmt in ("md", "html", "mermaid", "json"):
        outputs[f"report {fmt}"] = run_mcptape("report", tape, "--format", fmt).stdout
    for fmt in ("json", "jsonl", "har"):
        outputs[f"export {fmt}"] = run_mcptape("export", tape, "--format", fmt).stdout
    bug = folder / "everything.zip"
    bundle(tape, "-o", str(bug), "--force")  # nothing to refuse
    outputs.update({f"bundle {n}": d for n, d in members(bug).items()})
    assert all(len(text) > 100 for text in outputs.values())
    return outputs


def test_no_canary_reaches_a_report_an_export_or_a_bundle_of_a_redacted_tape(tmp_path):
    redacted = tmp_path / "redacted.mcptape"
    assert run_mcptape("redact", _secret_tape(tmp_path / "secret.mcptape"), "-o", str(redacted)).returncode == 0
    outputs = _everything(str(redacted), tmp_path)
    assert {name: _canaries_in(text) for name, text in outputs.items()} == {name: [] for name in outputs}
    assert "login" in outputs["report md"] and "<redacted:" in outputs["export har"]  # redacted, not dropped


def test_no_canary_of_a_real_recording_reaches_a_report_an_export_or_a_bundle(secret_server, record, tmp_path):
    """The redaction tests' canaries (a real SDK client and server, through `mcptape record`): a bearer header, a
    query key, a tool argument, a form body, a tool result, a resource, a log notification, a stderr line."""
    held = client_secrets()
    canaries = [*held.values(), *server_secrets("one")]
    tape, _ = record_session(secret_server, record, "one", held)
    outputs = _everything(str(tape), tmp_path)
    assert {name: [c for c in canaries if c in (text if isinstance(text, str) else text.decode("utf-8", "replace"))]
            for name, text in outputs.items()} == {name: [] for name in outputs}
    assert "tools/call #" in outputs["report md"] and "login" in outputs["report md"]

    unredacted, _ = record_session(secret_server, record, "one", held, "--no-redact")
    bug = tmp_path / "bug.zip"
    one_line_error(run_mcptape("bundle", str(unredacted), "-o", str(bug)), "the tapes still hold")
    bundle(str(unredacted), "-o", str(bug), "--redact")
    for name, data in members(bug).items():
        assert [c for c in canaries if c.encode() in data] == [], name


@pytest.mark.parametrize("bad", ["dir", "missing-dir"])
def test_bundle_usage_errors(real_tapes, tmp_path, bad):
    target = tmp_path if bad == "dir" else tmp_path / "no" / "bug.zip"
    one_line_error(run_mcptape("bundle", real_tapes["stdio"], "-o", str(target), "--force"), "existing directory")
    assert read(real_tapes["stdio"]).records  # the tape is untouched
