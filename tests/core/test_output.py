"""output.py: every file mcptape writes goes out one way (regular: whole, refused without --force; device, FIFO:
in place; symlink: written through), in memory and on a temp dir's own device nodes (never /dev/*)."""

import os
import stat
import threading

import pytest

from mcptape.output import Output, OutputError, opened
from mcptape.tape.file import TapeError, Writer, create_from_template, read
from mcptape.tape import records


def null_device(folder) -> str:
    path = os.path.join(folder, "null")
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    return path


def full_device(folder) -> str:
    path = os.path.join(folder, "full")
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 7))
    return path


def test_a_regular_file_is_written_whole_and_refused_without_force(tmp_path):
    path = tmp_path / "out.txt"
    with opened(path, text=True) as f:
        f.write("one")
        assert not path.exists()  # nothing at the path until it is complete
    assert path.read_text() == "one"
    with pytest.raises(OutputError, match="already exists"):
        opened(path).__enter__()
    with opened(path, force=True, text=True) as f:
        f.write("two")
    assert path.read_text() == "two"


def test_a_failure_leaves_nothing_behind(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with opened(path) as f:
            f.write(b"half")
            raise RuntimeError("midway")
    assert os.listdir(tmp_path) == []


def test_a_device_stays_a_device(tmp_path):
    device = null_device(tmp_path)
    with opened(device) as f:  # no --force needed: nothing is replaced
        f.write(b"gone")
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert os.listdir(tmp_path) == ["null"]


def test_a_full_device_is_one_line(tmp_path):
    with pytest.raises(OutputError, match=r"^cannot write .*full: No space left on device$"):
        with opened(full_device(tmp_path)) as f:
            f.write(b"x" * 100_000)


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    with opened(fifo, text=True) as f:
        f.write("through the pipe")
    reader.join(10)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old")
    link.symlink_to(target)
    with pytest.raises(OutputError, match="already exists"):
        Output(link)
    with opened(link, force=True, text=True) as f:
        f.write("new")
    assert link.is_symlink() and target.read_text() == "new"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "made.txt")
    with opened(dangling, text=True) as f:
        f.write("made")
    assert (tmp_path / "made.txt").read_text() == "made" and dangling.is_symlink()


def test_a_replaced_file_keeps_its_mode(tmp_path):
    path = tmp_path / "out"
    path.write_text("x")
    path.chmod(0o600)
    with opened(path, force=True) as f:
        f.write(b"y")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_directories_and_missing_folders_are_one_line(tmp_path):
    with pytest.raises(OutputError, match="it is a directory"):
        Output(tmp_path)
    with pytest.raises(OutputError, match="not a file in an existing directory"):
        Output(tmp_path / "nope" / "x")


def test_tapes_follow_the_same_rules(tmp_path):
    header = records.header(0.0, "test")
    device = null_device(tmp_path)
    with Writer(device, header, "new") as writer:  # record -o /dev/null
        writer.write(records.capture_stop(1.0, "stopped"))
    assert stat.S_ISCHR(os.stat(device).st_mode)
    target, link = tmp_path / "t.mcptape", tmp_path / "l.mcptape"
    link.symlink_to(target)
    for whole in (False, True):
        with Writer(link, header, "force", whole=whole):
            pass
        assert link.is_symlink() and read(target).header["tool"] == "test"
    with pytest.raises(TapeError, match="No space left on device"):
        Writer(full_device(tmp_path), header, "new")


def test_a_whole_tape_that_fails_leaves_nothing(tmp_path):
    path = tmp_path / "t.mcptape"
    with pytest.raises(RuntimeError):
        with Writer(path, records.header(0.0, "test"), whole=True):
            raise RuntimeError("midway")
    assert os.listdir(tmp_path) == []


def test_templates_stay_inside_mcptape_dir(tmp_path):
    inside = tmp_path / "tapes"
    inside.mkdir()
    header = records.header(0.0, "test")
    for escape in ("../x.mcptape", str(tmp_path / "x.mcptape"), "{date}/../../x-{n}.mcptape"):
        with pytest.raises(TapeError, match="leads out of MCPTAPE_DIR"):
            create_from_template(escape, header, str(inside))
    with create_from_template("sub-{n}.mcptape", header, str(inside)) as writer:
        assert os.path.dirname(writer.path) == str(inside)


def test_a_template_field_is_a_bare_name(tmp_path):
    # str.format would run an attribute or a conversion, or build a hundred-megabyte width, from a copied config
    header = records.header(0.0, "test")
    for template in ("{date.__class__}.mcptape", "{n[0]}.mcptape", "{n!r}.mcptape", "{n:03}.mcptape",
                     "{n:>100000000}.mcptape", "{n:{date}}.mcptape", "{0}.mcptape", "{}.mcptape", "{nope}.mcptape"):
        with pytest.raises(TapeError, match=r"unknown field \{.*\} \(use \{date\}, \{time\}, \{pid\}, \{n\}\)$"):
            create_from_template(str(tmp_path / template), header)
    with pytest.raises(TapeError, match="a brace in a name is written"):
        create_from_template(str(tmp_path / "{n.mcptape"), header)
    assert os.listdir(tmp_path) == []
    braced = tmp_path / "{dir}"  # only the template is a template, not MCPTAPE_DIR
    braced.mkdir()
    with create_from_template("{{n}}-{n}.mcptape", header, str(braced)) as writer:
        assert writer.path == str(braced / "{n}-1.mcptape")
