"""Writing user-visible files so that a reader never sees half of one, and nothing but a file is ever replaced.

Every write goes to a temporary file in the target's folder, is fsync'ed, then renamed over the target
(`write_atomic`) or hard-linked to a new name that must not exist yet (`create_exclusive`, link(2) fails
with EEXIST: two writers can never both succeed, and a crash leaves no 0-byte file behind).

- The target must be a regular file or a new path: a folder, a device (`-o /dev/full`), a FIFO or a socket
  is refused before any work starts (`output_problems`), so nothing but a file is ever replaced.
- `-o -` writes to standard output.
- An output that is one of the command's own input files (`reads`: the stack file, a usage file, a bill, a rollout's
  state file; the same file by any path or link, or the same path for one not there yet) is refused: the result would
  replace what it was computed from.
- A symlinked `-o` target is followed: the file it points at is replaced (atomically, in that file's folder)
  and the link stays a link.
- `output_problems` really creates (and removes) a probe file in the folder, so a read-only folder or file
  system is found before the work, not after it; a full disk is found at the write, and the old file stays.
- Several files into one folder (`write_folder`, e.g. `image render --out-dir`): all or nothing up to the renames.
  Every target is checked first (`folder_problems`: the folder is a folder or can be created, no target is a folder or
  a device), every file is written to a temporary file, and only when all of them are written are they renamed into
  place; a failure before that (a full disk) removes the temporary files and any folder it created. The renames are one
  at a time, which no file system makes atomic as a set: one that fails (rare: a file made immutable or a folder's
  permission changed since the check) removes the temporary files left and names the files replaced and those not.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpufleet.errors import Problem, UserError

STDOUT = "-"


def is_stdout(path: Path | str | None) -> bool:
    return path is not None and str(path) == STDOUT


def target_of(path: Path) -> Path:
    """The path that will really be replaced: a symlink's final target (relative links resolved), else the path."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def output_problems(
    path: Path,
    flag: str = "-o",
    reads: tuple[Path | str | None, ...] = (),
    make_folders: bool = False,
    *,
    shown: str | None = None,
) -> list[Problem]:
    """Why `path` cannot be written as an output file (checked before any work starts); [] when it can. `reads`: the
    command's input files, which it must not replace. make_folders: the command makes the missing folders when it
    writes (then the nearest folder that exists must be writable). `shown`: the file as messages name it when no
    option gives it (a stack file, a state file, a catalog): a problem is then `shown: message`, not
    `flag: path: message` (which named such a file twice)."""
    if is_stdout(path):
        return []
    if shown is not None:
        return [Problem(shown, "", p.message) for p in output_problems(path, flag, reads, make_folders)]
    shown = str(path)
    for read in reads:
        if read is not None and not is_stdout(read) and same_file(path, read):
            same = "" if str(read) == shown else f" ({read})"
            return [Problem(flag, shown, f"is an input of this command{same}: the output would replace it; give another file")]
    real = target_of(Path(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return [Problem(flag, shown, f"cannot use it: {exc.strerror}")]
    if st is not None and stat.S_ISDIR(st.st_mode):
        return [Problem(flag, shown, "is a folder: give a file name")]
    if st is not None and not stat.S_ISREG(st.st_mode):
        return [Problem(flag, shown, "is not a regular file (a device, FIFO or socket): not replacing it; give a file name")]
    folder = real.parent
    if not folder.is_dir():
        if not make_folders:
            return [Problem(flag, shown, f"folder {folder} does not exist: create it or write elsewhere")]
        folder = next(p for p in folder.parents if p.is_dir())
    if why := _probe(folder):
        return [Problem(flag, shown, f"cannot write in folder {folder}: {why}")]
    return []


def same_file(a: Path | str, b: Path | str) -> bool:
    """The same file by any path or link; for a file not there yet, the same path once links are followed (an input
    the command creates, as a rollout's state file, or looks for: a usage file it would read next time)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # either does not exist (a new output file) or cannot be read
        return os.path.realpath(a) == os.path.realpath(b)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_temp(folder: Path, name: str, data: bytes, mode: int) -> str:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def _mode(real: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(real).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def write_atomic(path: Path, content: str | bytes, flag: str = "-o", *, shown: str | None = None) -> None:
    """Replace `path` (a regular file or a new path) with `content`: temp file + fsync + rename.

    A crash or a full disk leaves the old file (or none), never a partial one. `-` writes to stdout. A problem names
    `flag: path`, or `shown` alone when given (a file no option gives: output_problems)."""
    if is_stdout(path):
        if isinstance(content, bytes):
            sys.stdout.buffer.write(content)
            sys.stdout.flush()
        else:
            sys.stdout.write(content)
            sys.stdout.flush()
        return
    if problems := output_problems(path, flag, shown=shown):
        raise UserError(problems)
    real = target_of(Path(path))
    try:
        tmp = _write_temp(real.parent, real.name, _as_bytes(content), _mode(real))
    except OSError as exc:
        why = f"cannot write: {exc.strerror}; the old file is unchanged"
        raise UserError([Problem(shown, "", why) if shown is not None else Problem(flag, str(path), why)]) from None
    try:
        os.replace(tmp, real)
    except BaseException as exc:
        _unlink(tmp)
        if isinstance(exc, OSError):
            why = f"cannot replace it: {exc.strerror}; the old file is unchanged"
            raise UserError([Problem(shown, "", why) if shown is not None else Problem(flag, str(path), why)]) from None
        raise
    _fsync_folder(real.parent)


def create_exclusive(path: Path, content: str | bytes, shown: str | None = None, exists: str = "already exists") -> None:
    """Create `path` with `content`, atomically and only if it does not exist yet (temp file + link(2)).

    Never a partial file at `path`; if another writer got there first, this one fails with `exists`."""
    shown = shown or str(path)
    path = Path(path)
    if os.path.lexists(path):
        raise UserError([Problem(shown, "", exists)])
    try:
        tmp = _write_temp(path.parent, path.name, _as_bytes(content), _mode(path))
    except OSError as exc:
        raise UserError([Problem(shown, "", f"cannot write: {exc.strerror}; nothing was created")]) from None
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise UserError([Problem(shown, "", exists)]) from None
    except OSError as exc:
        raise UserError([Problem(shown, "", f"cannot create: {exc.strerror}; nothing was created")]) from None
    finally:
        _unlink(tmp)
    _fsync_folder(path.parent)


def _probe(folder: Path) -> str | None:
    """Why no file can be created in `folder` (the OS's reason), None when one can (a probe file is made and removed)."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gpufleet.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def folder_problems(folder: Path, names: Iterable[str], flag: str) -> list[Problem]:
    """Why the files `names` cannot all be written into `folder` (an existing folder, or a new path to create under
    its nearest existing parent folder); [] when they can. Checked before any work starts; nothing is created. `-`,
    standard output everywhere else (-o -), is refused: a folder named `-` was made."""
    if is_stdout(folder):
        return [Problem(flag, STDOUT, "give a folder: - (standard output) cannot hold several files")]
    folder = Path(folder)
    shown = str(folder)
    if not os.path.lexists(folder):
        parent = next((p for p in folder.absolute().parents if os.path.lexists(p)), Path("/"))
        if not parent.is_dir():
            return [Problem(flag, shown, f"{parent} is a file, not a folder: cannot create a folder under it")]
        if why := _probe(parent):
            return [Problem(flag, shown, f"cannot create it: {parent} takes no new file or folder ({why})")]
        return []
    if not folder.is_dir():
        return [Problem(flag, shown, "exists and is not a folder: give a folder (an existing one or a new path)")]
    problems: list[Problem] = []
    folders = {folder}
    for name in names:
        real = target_of(folder / name)
        try:
            st = os.stat(real)
        except FileNotFoundError:
            folders.add(real.parent)
            continue
        except OSError as exc:
            problems.append(Problem(flag, str(folder / name), f"cannot use it: {exc.strerror}"))
            continue
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
            problems.append(Problem(flag, str(folder / name), f"is {kind}: not replacing it; remove it or give another {flag}"))
        folders.add(real.parent)
    for f in sorted(folders):
        if not f.is_dir():
            problems.append(Problem(flag, shown, f"folder {f} (a link's target) does not exist"))
        elif why := _probe(f):
            problems.append(Problem(flag, shown, f"cannot write in folder {f}: {why}"))
    return problems


def write_folder(folder: Path, files: Mapping[str, str | bytes], flag: str) -> None:
    """Write `files` (file name -> content) into `folder`, creating it (and its parents) if missing: all or nothing
    up to the renames.

    Checked first (`folder_problems`); then every file goes to a temporary file next to its target, and only when all
    are written are they renamed into place, in the order given. A failure before that (a full disk) removes the
    temporary files and the folders made here, and the old files stay. A rename that fails (UserError) cannot be made
    atomic with the others: the temporary files not renamed are removed and the message names the files replaced and
    those not (each as it was)."""
    folder = Path(folder)
    if problems := folder_problems(folder, files, flag):
        raise UserError(problems)
    made: list[Path] = []
    staged: list[tuple[str, Path, str]] = []
    try:
        for missing in reversed([folder, *folder.parents]):
            if not os.path.lexists(missing):
                missing.mkdir()
                made.append(missing)
        for name, content in files.items():
            real = target_of(folder / name)
            staged.append((_write_temp(real.parent, real.name, _as_bytes(content), _mode(real)), real, name))
    except BaseException as exc:
        for tmp, _, _ in staged:
            _unlink(tmp)
        for f in reversed(made):
            try:
                f.rmdir()
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise UserError([Problem(flag, str(folder), f"cannot write: {exc.strerror}; nothing was written")]) from None
        raise
    done = 0
    try:
        for tmp, real, _ in staged:
            os.replace(tmp, real)
            done += 1
    except BaseException as exc:
        for tmp, _, _ in staged[done:]:
            _unlink(tmp)
        if not isinstance(exc, OSError):
            raise
        replaced = ", ".join(name for _, _, name in staged[:done]) or "none"
        kept = ", ".join(name for _, _, name in staged[done:])
        why = (
            f"cannot rename {staged[done][2]} into place: {exc.strerror}; replaced: {replaced}; not replaced (each as it "
            f"was): {kept}; the files are renamed into place one at a time, which cannot be atomic: write them again "
            "once that is fixed"
        )
        raise UserError([Problem(flag, str(folder), why)]) from None
    finally:
        for f in {real.parent for _, real, _ in staged[:done]}:
            _fsync_folder(f)


def package_file(path: Path) -> str:
    """A file or folder of the package as messages name it: relative to the current folder when under it (a checkout's
    src/gpufleet/...), else its full path (an installed gpufleet's .../site-packages/gpufleet/...)."""
    real = Path(os.path.realpath(path))
    try:
        return str(real.relative_to(os.path.realpath(os.getcwd())))
    except (ValueError, OSError):  # not under the current folder, or that folder is gone (getcwd fails)
        return str(real)
