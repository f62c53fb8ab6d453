"""Which files on the server the app may follow: only under the folders named with `ui --follow-dir`.

"Follow a growing log" reads a path on the machine the app runs on, with the server's permissions, and the
kept-token view shows back what it read. On loopback that is the user's own machine and account, so any path
may be followed unless folders are named; reachable from other machines, only the named folders (none by default).
Paths are resolved (symbolic links, "..") before they are checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FollowDirs:
    # None: any path this process can read (loopback without --follow-dir); otherwise only under these folders.
    folders: tuple[Path, ...] | None = None

    def __post_init__(self) -> None:
        for folder in self.folders or ():
            if not folder.is_absolute() or folder != folder.resolve():
                raise ValueError(f"a follow folder must be given resolved, got {folder}")

    @classmethod
    def for_server(cls, named: list[str] | None, loopback: bool) -> FollowDirs:
        """The policy for `ui`: the --follow-dir folders (each must exist), else any path on loopback, else none."""
        if named:
            folders = []
            for name in named:
                folder = Path(name).expanduser().resolve()
                if not folder.is_dir():
                    raise ValueError(f"--follow-dir {name}: no such folder")
                folders.append(folder)
            return cls(tuple(folders))
        return cls(None if loopback else ())

    def describe(self) -> str:
        """Which files may be followed, for the page."""
        if self.folders is None:
            return "any text or log file on this machine"
        if not self.folders:
            return "none: the app was started without --follow-dir"
        return "files under " + ", ".join(str(folder) for folder in self.folders)

    def check(self, path: str) -> Path:
        """The resolved path when it may be followed; ValueError with one line for the user otherwise."""
        if not (path or "").strip():
            raise ValueError("type the path of a log file on this machine")
        if self.folders is not None and not self.folders:
            raise ValueError("following files on the server is off; start the app with --follow-dir FOLDER to allow it")
        resolved = Path(path.strip()).expanduser().resolve()
        if self.folders is None or any(resolved.is_relative_to(folder) for folder in self.folders):
            return resolved
        allowed = ", ".join(str(folder) for folder in self.folders)
        raise ValueError(f"{path} is outside the folders the app may follow ({allowed})")
