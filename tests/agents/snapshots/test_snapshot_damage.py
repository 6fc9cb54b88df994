"""Stores that degrade per session: a damaged, truncated, torn, overwritten or foreign store
file — or one with bytes flipped in a page or in a value — is one clear error naming its
file and `sessions doctor`, and leaves the others usable; reading never creates a store or
changes one; snapshots of a newer schema or store format are refused with their number;
`sessions doctor` moves damaged stores aside and keeps what still reads; a store a save
finds damaged is moved aside and the session goes on saving; format-1 stores (values in
files) still load."""

import json
import os
import sqlite3
from pathlib import Path

import diskcache
import pytest

from agents.messages import Message
from agents.snapshots._codec import encode_message, pack, unpack
from agents.snapshots._doctor import check_store
from agents.snapshots._store import (
    DiskSnapshotStore,
    SnapshotCorrupt,
    SnapshotNotFound,
    SnapshotTooNew,
    StoreDamaged,
)
from cluster.terminal._cli import main
from tests.support.fakes import session_state, tool_interaction, trust_workspace


def _conversation(pairs: int, body_chars: int = 200) -> list[Message]:
    messages = [Message.user("investigate")]
    for i in range(pairs):
        messages += tool_interaction(i, body_chars)
    return messages


def _three_sessions(root: Path, cwd: str = "/work/ws") -> None:
    """alpha, broken and gamma; broken's file spans many pages (ten 3,000-character results),
    so damage in its middle lands in pages a load reads."""
    store = DiskSnapshotStore(root)
    for n, sid in enumerate(["alpha", "broken", "gamma"]):
        conversation = _conversation(10, 3_000) if sid == "broken" else _conversation(n + 1)
        state = session_state(conversation, session_id=sid, saved_at=1_000.0 + n)
        store.save(state.model_copy(update={"cwd": cwd}))
    store.close()


PAGE = 4096  # diskcache's SQLite page size


def _truncate(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


def _torn(db: Path) -> None:
    """Cut in the middle of a page, as a write torn by a crash leaves it."""
    os.truncate(db, db.stat().st_size // PAGE // 2 * PAGE + 1000)


def _cut_at_a_page(db: Path) -> None:
    os.truncate(db, db.stat().st_size // PAGE // 2 * PAGE)


def _header_overwritten(db: Path) -> None:
    with db.open("r+b") as file:
        file.write(b"\xde\xad\xbe\xef" * 4)


def _flipped_mid_file(db: Path) -> None:
    """Every bit of the first 8 bytes of the middle page flipped (its b-tree page header,
    or the pointer that chains an overflow page)."""
    _flip(db, db.stat().st_size // PAGE // 2 * PAGE, 8)


def _flip(db: Path, offset: int, count: int) -> None:
    with db.open("r+b") as file:
        file.seek(offset)
        spoiled = bytes(b ^ 0xFF for b in file.read(count))
        file.seek(offset)
        file.write(spoiled)


def _garbage(db: Path) -> None:
    db.write_bytes(b"this is not a database at all\x00" * 200)


def _foreign(db: Path) -> None:
    db.unlink()
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
    connection.commit()
    connection.close()


def _bad_record(db: Path) -> None:
    with diskcache.Cache(str(db.parent)) as cache:
        cache.set("session", b"\xc1 not msgpack")


OVERWRITTEN = "its first 16 bytes are not SQLite's header"
# Damage the opening of the file shows: its header, its length, its session record.
SEEN_AT_OPEN = {
    "truncated": (_truncate, "it was cut short"),
    "torn mid-page": (_torn, "it ends 1000 bytes into a page of 4096 bytes: it was cut short or torn"),
    "cut at a page boundary": (_cut_at_a_page, "where its header says"),
    "16-byte header overwritten": (_header_overwritten, f"{OVERWRITTEN} (b'\\xde\\xad\\xbe\\xef"),
    "garbage": (_garbage, OVERWRITTEN),
    "foreign": (_foreign, "another program's database (tables invoices)"),
    "bad record": (_bad_record, "its session record is not a Workingset record"),
}
# Damage inside a page: found by the load that reads it (SQLite, or a checksum and then SQLite's check).
DAMAGE = {**SEEN_AT_OPEN, "bytes flipped mid-file": (_flipped_mid_file, "malformed")}


def _files(root: Path) -> set[str]:
    """Every file and directory, leaving out the -wal/-shm working files SQLite keeps
    beside a database it has opened (a read-only reader may leave them behind)."""
    if not root.exists():
        return set()
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.name.endswith(("-wal", "-shm"))}


# -- one damaged file, one session -----------------------------------------------------------


def _one_damaged(tmp_path: Path, damage: str) -> tuple[Path, str]:
    """Sessions alpha, broken and gamma, broken's store file spoiled; (root, what the error says)."""
    root = tmp_path / "snapshots"
    _three_sessions(root)
    spoil, why = DAMAGE[damage]
    spoil(root / "broken" / "cache.db")
    return root, why


@pytest.mark.parametrize("damage", list(SEEN_AT_OPEN))
def test_a_damaged_store_file_names_its_session_and_leaves_the_others_listed(tmp_path, damage):
    root, why = _one_damaged(tmp_path, damage)
    scan = DiskSnapshotStore(root).scan()
    assert [s.session_id for s in scan.sessions] == ["gamma", "alpha"]
    [problem] = scan.problems
    assert problem.session_id == "broken" and why in problem.problem
    assert "`workingset sessions doctor` moves it aside" in problem.problem


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_loading_a_damaged_store_is_one_clear_error_and_the_others_load(tmp_path, damage):
    root, why = _one_damaged(tmp_path, damage)
    store = DiskSnapshotStore(root)
    with pytest.raises(StoreDamaged, match="session broken") as caught:
        store.load("broken")
    message = str(caught.value)
    assert why in message and f"({root / 'broken' / 'cache.db'})" in message
    assert "`workingset sessions doctor`" in message and "\n" not in message
    assert store.load("alpha").state.conversation == _conversation(1)
    assert store.load("gamma").state.conversation == _conversation(3)


def test_reading_a_missing_session_creates_no_file(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    for read in (lambda: store.load("nope"), lambda: store.history("nope")):
        with pytest.raises(SnapshotNotFound):
            read()
    assert store.scan().sessions == [] and not root.exists()

    (root / "empty").mkdir(parents=True)  # a session directory whose store file is missing
    before = _files(root)
    with pytest.raises(SnapshotNotFound, match="no snapshot of session empty"):
        store.load("empty")
    assert store.scan().problems == [] and _files(root) == before


def test_reading_a_damaged_store_changes_nothing_in_it(tmp_path):
    root = tmp_path / "snapshots"
    _three_sessions(root)
    _foreign(root / "broken" / "cache.db")
    before = (root / "broken" / "cache.db").read_bytes()
    store = DiskSnapshotStore(root)
    with pytest.raises(StoreDamaged):
        store.load("broken")
    store.scan()
    assert (root / "broken" / "cache.db").read_bytes() == before  # no diskcache tables were added to it


# -- newer schema or store format ---------------------------------------------------------------


def test_a_snapshot_of_a_newer_schema_is_refused_with_its_version_and_not_fallen_back_from(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state(_conversation(1)))
    newest = store.save(session_state(_conversation(2)))
    store.close()
    with diskcache.Cache(str(root / "sess01")) as cache:
        envelope = unpack(cache.get("v:" + newest))
        cache.set("v:" + newest, pack({**envelope, "schema": 7}))
    with pytest.raises(
        SnapshotTooNew, match=f"snapshot version {newest} has schema 7; this Workingset reads schemas 1 to 2"
    ) as caught:
        DiskSnapshotStore(root).load("sess01")
    assert caught.value.found == 7


def test_a_store_of_a_newer_format_is_refused_and_never_written(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state(_conversation(1)))
    store.close()
    with diskcache.Cache(str(root / "sess01")) as cache:
        cache.set("session", pack({**unpack(cache.get("session")), "format": 3}))
    before = (root / "sess01" / "cache.db").read_bytes()
    store = DiskSnapshotStore(root)
    with pytest.raises(
        SnapshotTooNew, match="the store of session sess01 .* has format 3; this Workingset reads formats 1 to 2"
    ):
        store.load("sess01")
    with pytest.raises(SnapshotTooNew, match="has format 3"):
        store.save(session_state(_conversation(2)))
    store.close()
    assert (root / "sess01" / "cache.db").read_bytes() == before


# -- a store found damaged by a save -------------------------------------------------------------


def test_a_store_found_damaged_when_a_session_saves_is_moved_aside_and_saving_goes_on(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state(_conversation(1)))
    _garbage(root / "sess01" / "cache.db")
    store.close()  # the next process of the session finds it so (an open connection keeps its cached pages)
    store = DiskSnapshotStore(root)
    version = store.save(session_state(_conversation(2)))
    [aside] = (root / ".quarantine").iterdir()
    assert aside.name.startswith("sess01-") and (aside / "cache.db").read_bytes().startswith(b"this is not a database")
    assert OVERWRITTEN in (aside / "WHY.txt").read_text()
    loaded = store.load("sess01")
    assert loaded.version == version and loaded.state.conversation == _conversation(2)
    [info] = store.scan().sessions
    assert info.moved_aside == str(aside)
    store.close()


# -- sessions doctor ------------------------------------------------------------------------------


def test_doctor_moves_a_damaged_store_aside_and_keeps_every_version_that_reads(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    versions = [store.save(session_state(_conversation(n), session_id="broken")) for n in range(1, 4)]
    store.close()
    _three_sessions(tmp_path / "unused")  # nothing shared with `root`
    _bad_record(root / "broken" / "cache.db")

    report = check_store(DiskSnapshotStore(root))
    [check] = report.sessions
    assert check.status == "repaired" and "its session record is not a Workingset record" in check.detail
    assert "kept 3 of 3 versions in a fresh store" in check.detail
    [aside] = (root / ".quarantine").iterdir()
    assert f"moved aside to {aside}" in check.detail and report.quarantined == 1
    store = DiskSnapshotStore(root)
    assert [v.version for v in store.history("broken")] == list(reversed(versions))
    assert store.load("broken").state.conversation == _conversation(3)
    assert check_store(store).sessions[0].status == "ok"


def test_doctor_repairs_a_store_whose_16_byte_header_was_overwritten_keeping_every_version(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    versions = [store.save(session_state(_conversation(n, 3_000), session_id="broken")) for n in range(1, 4)]
    store.close()
    _header_overwritten(root / "broken" / "cache.db")

    [check] = check_store(DiskSnapshotStore(root)).sessions
    assert check.status == "repaired" and OVERWRITTEN in check.detail
    assert "kept 3 of 3 versions in a fresh store" in check.detail
    [aside] = (root / ".quarantine").iterdir()
    assert (aside / "cache.db").read_bytes().startswith(b"\xde\xad\xbe\xef")  # moved aside as it was found
    store = DiskSnapshotStore(root)
    assert [v.version for v in store.history("broken")] == list(reversed(versions))
    assert store.load("broken").state.conversation == _conversation(3, 3_000)


def _flip_in_value(db: Path, value: bytes) -> None:
    """Flip one byte in the middle of `value` where the file holds it."""
    at = db.read_bytes().find(value)
    assert at > 0, "the value is stored in one piece"
    _flip(db, at + len(value) // 2, 1)


def test_bytes_flipped_in_a_value_every_version_holds_are_one_error_naming_the_file_and_the_doctor(tmp_path):
    root = tmp_path / "snapshots"
    _three_sessions(root)
    _, first = encode_message(_conversation(1)[0])  # "investigate": in every version of every session
    _flip_in_value(root / "broken" / "cache.db", first)
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt) as caught:
        store.load("broken")
    message = str(caught.value)
    assert "is missing or damaged" in message and "no intact older version exists" in message
    assert str(root / "broken" / "cache.db") in message and "`workingset sessions doctor`" in message
    assert store.load("gamma").state.conversation == _conversation(3)


def test_bytes_flipped_in_a_value_only_the_newest_version_holds_fall_back_to_the_older_one(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    older = store.save(session_state(_conversation(2)))
    store.save(session_state(_conversation(3)))
    store.close()
    _, newest_result = encode_message(_conversation(3)[-1])
    _flip_in_value(root / "sess01" / "cache.db", newest_result)
    loaded = DiskSnapshotStore(root).load("sess01")
    assert loaded.version == older and loaded.state.conversation == _conversation(2)
    assert "is missing or damaged" in loaded.problem


def test_a_version_that_fails_its_checks_in_a_file_with_damaged_pages_blames_the_file(tmp_path):
    """Bytes flipped at the head of a page in the middle of a long session's file: the load
    finds a message whose checksum fails, and SQLite's check, run then, finds the page."""
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state(_conversation(15, 6_000)))
    store.save(session_state(_conversation(30, 6_000)))
    store.close()
    _flipped_mid_file(root / "sess01" / "cache.db")
    with pytest.raises(StoreDamaged, match="is missing or damaged, and SQLite's check of the file reports: "):
        DiskSnapshotStore(root).load("sess01")


def test_doctor_moves_aside_a_sound_file_in_which_no_version_reads(tmp_path):
    root = tmp_path / "snapshots"
    _three_sessions(root)
    _, first = encode_message(_conversation(1)[0])
    _flip_in_value(root / "broken" / "cache.db", first)
    checks = {c.session_id: c for c in check_store(DiskSnapshotStore(root)).sessions}
    assert checks["broken"].status == "repaired"
    assert "no version of the session can be read" in checks["broken"].detail
    [aside] = (root / ".quarantine").iterdir()
    assert f"moved aside to {aside}" in checks["broken"].detail and (aside / "cache.db").is_file()
    assert checks["alpha"].status == checks["gamma"].status == "ok"
    assert [s.session_id for s in DiskSnapshotStore(root).scan().sessions] == ["gamma", "alpha"]


def test_doctor_dry_run_reports_and_changes_nothing(tmp_path):
    root = tmp_path / "snapshots"
    _three_sessions(root)
    _truncate(root / "broken" / "cache.db")
    before = _files(root)
    report = check_store(DiskSnapshotStore(root), repair=False)
    assert [(c.session_id, c.status) for c in report.sessions] == [
        ("alpha", "ok"),
        ("broken", "damaged"),
        ("gamma", "ok"),
    ]
    assert not report.healthy and _files(root) == before


def test_doctor_reports_corrupt_versions_in_a_sound_file_and_how_to_make_an_intact_one_current(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    first = store.save(session_state(_conversation(1)))
    second = store.save(session_state(_conversation(2)))
    store.close()
    with diskcache.Cache(str(root / "sess01")) as cache:
        cache.set("v:" + second, b"garbage")
    [check] = check_store(DiskSnapshotStore(root)).sessions
    assert check.status == "corrupt versions"
    assert f"versions {second} fail their checks" in check.detail
    assert f"`workingset sessions restore sess01 {first}` makes it current" in check.detail


# -- format-1 stores ----------------------------------------------------------------------------


def test_a_format_1_store_with_values_in_files_loads_and_its_next_save_keeps_everything_in_sqlite(tmp_path):
    """Written the way the old store did: diskcache defaults (values over 32 KiB in files),
    a pickled record. A save after loading it adds its new message inside SQLite."""
    root = tmp_path / "snapshots"
    conversation = _conversation(2, body_chars=50_000)
    with diskcache.Cache(str(root / "sess01")) as legacy:  # diskcache's defaults, as format 1 had them
        store = DiskSnapshotStore(root)
        version = store.save(session_state(conversation))
        store.close()
        record = unpack(legacy.get("session"))
        del record["format"]
        legacy.set("session", record)  # pickled, as format 1 stored it
        for key in list(legacy.iterkeys()):
            if key.startswith("m:"):
                value = legacy.get(key)
                legacy.delete(key)
                legacy.reset("disk_min_file_size", 32_768)
                legacy.set(key, value)
    value_files = {p for p in (root / "sess01").rglob("*.val")}
    assert len(value_files) == 2  # the two 50 KB results live in files

    store = DiskSnapshotStore(root)
    loaded = store.load("sess01")
    assert loaded.version == version and loaded.state.conversation == conversation
    store.save(loaded.state.model_copy(update={"conversation": [*conversation, *tool_interaction(9, 60_000)]}))
    store.close()
    assert {p for p in (root / "sess01").rglob("*.val")} == value_files
    assert len(DiskSnapshotStore(root).load("sess01").state.conversation) == len(conversation) + 2


# -- the command line -------------------------------------------------------------------------------


def _cli_home(tmp_path: Path) -> tuple[Path, Path]:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    trust_workspace(ws)
    (ws / ".workingset").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "resumed fine"}]}))
    (ws / ".workingset" / "config.toml").write_text(f'model = "scripted:{script}"\nhome = "{tmp_path / "home"}"\n')
    _three_sessions(tmp_path / "home" / "snapshots", cwd=str(ws))
    return ws, tmp_path / "home" / "snapshots"


def test_sessions_list_names_the_damaged_session_and_lists_the_others(tmp_path, capsys):
    ws, root = _cli_home(tmp_path)
    _truncate(root / "broken" / "cache.db")
    assert main(["sessions", "--cwd", str(ws), "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["gamma", "alpha", "broken"]
    assert "cannot be read: the snapshot store of session broken" in lines[2] and "sessions doctor" in lines[2]


def test_resuming_the_damaged_session_is_one_clear_line(tmp_path, capsys):
    ws, root = _cli_home(tmp_path)
    _garbage(root / "broken" / "cache.db")
    assert main(["run", "go on", "--cwd", str(ws), "--resume", "broken", "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "workingset: error: cannot resume broken: the snapshot store of session broken"
    )
    assert "`workingset sessions doctor` moves it aside" in err[0]


def test_continue_skips_the_damaged_session_and_says_so(tmp_path, capsys):
    ws, root = _cli_home(tmp_path)
    _foreign(root / "gamma" / "cache.db")  # the newest one
    assert main(["run", "go on", "--cwd", str(ws), "--continue", "--json"]) == 0
    captured = capsys.readouterr()
    assert "workingset: notice: the snapshot store of session gamma" in captured.err
    assert json.loads(captured.out.splitlines()[0])["session_id"] == "broken"


def test_sessions_doctor_quarantines_the_damaged_store_and_reports(tmp_path, capsys):
    ws, root = _cli_home(tmp_path)
    _torn(root / "broken" / "cache.db")
    torn = "it ends 1000 bytes into a page of 4096 bytes: it was cut short or torn"
    assert main(["sessions", "--cwd", str(ws), "doctor", "--dry-run"]) == 1
    assert f"broken  damaged: {torn}" in capsys.readouterr().out
    assert main(["sessions", "--cwd", str(ws), "doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    [aside] = (root / ".quarantine").iterdir()
    assert out[0] == f"broken  repaired: {torn}; moved aside to {aside}; no version could be read from it"
    assert out[1] == f"checked 3 sessions in {root}: 2 ok, 1 repaired"
    assert out[2] == f"1 stores moved aside are kept in {root}/.quarantine/ (delete them when done)"
    assert main(["sessions", "--cwd", str(ws), "list"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["gamma", "alpha"]
