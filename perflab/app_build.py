"""An app's artifact on the controller: whether it must be built, its build, and a directory artifact
packed as one tar (what `perflab app build` and `perflab app pack` run, and make, compare and
reproduce before a run). Apart from perflab/manifest.py, which says what a manifest holds and
where its artifact is: this part changes with how apps are built (a build tool, a newer-than
rule, the tar's format), the manifest with what the lab needs to know of an app."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from perflab.manifest import Manifest, ManifestError, artifact_dir, artifact_path, artifact_paths, controller_text, shown


class BuildError(RuntimeError):
    """The artifact could not be built, or is missing after its build."""



def _newest(path: Path) -> float:
    """The newest modification time of a file, or of the files below a directory (as make's
    prerequisites were: a directory's own time changes with no source changing)."""
    if not path.is_dir():
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)


def artifact_problem(manifest: Manifest, path: Path) -> str | None:
    """Why the artifact at PATH cannot be deployed, or None."""
    jar = manifest.launch.jar
    if jar is None:
        if not path.is_file():
            return f"the jar {shown(path)} does not exist" + (" (it is a directory: name the jar in it in launch.jar)"
                                                              if path.is_dir() else "")
        return None
    if not path.is_dir():
        return f"the directory {shown(path)} does not exist" + (" (it is a file: leave out launch.jar)" if path.exists() else "")
    if not (path / jar).is_file():
        return f"launch.jar {jar!r} is not a file in {shown(path)}"
    return None


def build_reason(manifest: Manifest, environ: Mapping[str, str] | None = None) -> str | None:
    """Why the artifact must be built now (each of them, with artifact.by_db_engine), or None when it is up to
    date (or cannot be built)."""
    build, paths = manifest.artifact.build, artifact_paths(manifest, environ)
    if build is None:
        return None
    for path in paths:
        if not path.exists():
            return f"{shown(path)} is missing"
    base = artifact_dir(manifest, environ)
    oldest = min(paths, key=_newest)
    newest, newest_source = _newest(oldest), 0.0
    for index, source in enumerate(build.sources):
        source_path = base / controller_text(manifest, source, f"artifact.build.sources[{index}]", environ)
        if not source_path.exists():
            raise ManifestError([f"{shown(manifest.file)}: artifact.build.sources[{index}]: {shown(source_path)} does "
                                 "not exist; allowed: files or directories relative to artifact.dir"])
        newest_source = max(newest_source, _newest(source_path))
    return f"{shown(oldest)} is older than its sources" if newest_source > newest else None


def build(manifest: Manifest, say: Callable[[str], None] = print) -> Path:
    """Build the artifact when it is missing or older than its sources; the artifact's path.
    BuildError when the build fails or leaves no artifact."""
    paths, reason = artifact_paths(manifest), build_reason(manifest)
    if reason is not None and manifest.artifact.build is not None:
        spec = manifest.artifact.build
        where = artifact_dir(manifest)
        command = [controller_text(manifest, c, f"artifact.build.command[{i}]") for i, c in enumerate(spec.command)]
        env = dict(os.environ)
        env.update({k: controller_text(manifest, v, f"artifact.build.env.{k}") for k, v in spec.env.items()})
        say(f"perflab app: building {manifest.name} ({reason}): {' '.join(command)} in {shown(where)}")
        try:
            done = subprocess.run(command, cwd=where, env=env, check=False)
        except OSError as error:
            raise BuildError(f"{manifest.name}: the build could not start: {' '.join(command)} in {shown(where)}: "
                             f"{error.strerror}") from None
        if done.returncode != 0:
            raise BuildError(f"{manifest.name}: the build failed (exit {done.returncode}): {' '.join(command)} in "
                             f"{shown(where)}")
    for path in paths:
        problem = artifact_problem(manifest, path)
        if problem is not None:
            how = ("after its build: check artifact.path and launch.jar in " if manifest.artifact.build is not None else
                   "and its manifest has no build: build it, or fix artifact.path in ")
            raise BuildError(f"{manifest.name}: {problem} {how}{shown(manifest.file)}")
    return paths[0]


def pack(manifest: Manifest, output: Path) -> bool:
    """A directory artifact as one tar at OUTPUT (entries sorted, times and owners zeroed, so the
    same content gives the same bytes); rewritten only when its content changed. True when written."""
    source = artifact_path(manifest)
    problem = artifact_problem(manifest, source)
    if problem is not None or manifest.launch.jar is None:
        raise BuildError(f"{manifest.name}: nothing to pack: {problem or 'the artifact is a jar, not a directory'}")

    def normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
        return info

    output.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.")
    os.close(handle)
    try:
        with tarfile.open(temporary, "w", format=tarfile.PAX_FORMAT) as tar:
            for directory, subdirectories, files in os.walk(source):
                subdirectories.sort()
                here = Path(directory)
                tar.add(here, arcname=str(source.name / here.relative_to(source)), recursive=False, filter=normal)
                for name in sorted(files):
                    tar.add(here / name, arcname=str(source.name / here.relative_to(source) / name), filter=normal)
        if output.is_file() and _digest(output) == _digest(Path(temporary)):
            return False
        os.replace(temporary, output)
        return True
    finally:
        Path(temporary).unlink(missing_ok=True)


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
