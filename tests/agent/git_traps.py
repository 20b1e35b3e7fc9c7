"""A Git repository whose configuration names a program everywhere git could run one.

Each program is one small script that records its name in a marks folder (and passes content
through where git expects it to). The repository's config names an fsmonitor hook, an external
diff, a diff driver's command, a textconv driver, hooks, a pager, a credential helper, a gpg
program (and turns on signature display; the branch's tip carries a signature), and filter
drivers with clean, smudge and process commands (one only through an included file, one whose
name holds ``=``, one whose name is empty). A global config planted under HOME and
XDG_CONFIG_HOME, a system config and ``GIT_*`` variables (``ENVIRONMENT``, for the reviewing
process) name more. A review that runs none of them leaves ``fired()`` empty.

History: ``main`` has "First version" (every file ``one``), ``feature`` adds "Second version"
(``two``) and "Signed version" (``app.txt`` ``signed``); the index holds ``staged`` in
``app.txt``, and the work tree ``three`` in every file. The traps are set after all that, so
building the repository runs none of them.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

FILES = (
    ("app.txt", "filter=cf diff=drv"),
    ("data.dat", "filter=pf"),
    ("conf.cfg", "diff=tc"),
    ("notes.md", ""),
    ("extra.inc", "filter=inc"),
    ("odd.weird", "filter=a=b"),
    ("home.glob", "filter=glob"),
    ("xdg.xdg", "filter=xdg"),
    ("system.sys", "filter=sys"),
    ("env.envp", "filter=envp"),
    ("blank.bl", "filter="),
)

_MARK = """#!/bin/sh
name=$1
shift
: > '{marks}'/"$name"
case $name in
  *clean|smudge) exec cat ;;
  textconv) exec cat "$1" ;;
  process) exit 1 ;;
esac
exit 0
"""

_HOOKS = ("post-index-change", "reference-transaction", "pre-auto-gc", "post-checkout")


def git(repo: Path, *args: str) -> str:
    """Plain git in ``repo`` (with the caller's environment), its stdout."""
    done = subprocess.run(
        ["git", "-c", "user.name=Reviewer", "-c", "user.email=r@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout


def _write_all(repo: Path, text: str) -> None:
    for name, _ in FILES:
        (repo / name).write_text(f"{text}\n")


def _sign_head(repo: Path) -> None:
    """Give HEAD a (fake) PGP signature: showing it would run the gpg program."""
    raw = git(repo, "cat-file", "commit", "HEAD")
    head, _, message = raw.partition("\n\n")
    signature = (
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    )
    signed = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo,
        input=f"{head}\n{signature}\n\n{message}",
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    git(repo, "update-ref", "refs/heads/feature", signed)


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@dataclass(frozen=True)
class Traps:
    repo: Path
    marks: Path
    environment: dict[str, str]
    """Variables for the reviewing process: a HOME, XDG_CONFIG_HOME and system config with
    programs of their own, and ``GIT_*`` variables naming more."""

    def fired(self) -> list[str]:
        """The name of every program that ran."""
        return sorted(p.name for p in self.marks.iterdir())


def make_traps(repo: Path, root: Path) -> Traps:
    """Build the repository in ``repo`` (an empty folder) and set its traps; helpers go in
    ``root`` (outside ``repo``, a path without spaces)."""
    assert " " not in str(root)
    root.mkdir(parents=True, exist_ok=True)
    marks = root / "marks"
    marks.mkdir()
    mark = _executable(root / "mark", _MARK.format(marks=marks))
    gpg = _executable(root / "gpg", f"#!/bin/sh\n: > '{marks}/gpg'\nexit 1\n")
    hooks = root / "hooks"
    hooks.mkdir()
    for hook in _HOOKS:
        _executable(hooks / hook, f"#!/bin/sh\n: > '{marks}/hook-{hook}'\n")

    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("".join(f"{n} {a}\n" for n, a in FILES if a))
    _write_all(repo, "one")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "First version")
    git(repo, "checkout", "-q", "-b", "feature")
    _write_all(repo, "two")
    git(repo, "commit", "-q", "-am", "Second version")
    (repo / "app.txt").write_text("signed\n")
    git(repo, "commit", "-q", "-am", "Signed version")
    _sign_head(repo)
    git(repo, "reset", "-q", "--hard")
    (repo / "app.txt").write_text("staged\n")
    git(repo, "add", "app.txt")
    _write_all(repo, "three")

    def filter_config(name: str) -> str:
        return f'[filter "{name}"]\n\tclean = {mark} {name}-clean\n\trequired = true\n'

    included = root / "included.cfg"
    included.write_text(filter_config("inc"))
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f"[core]\n\tfsmonitor = {mark} fsmonitor\n\thooksPath = {hooks}\n"
            f"\tpager = {mark} pager\n\tuntrackedCache = true\n"
            f"[diff]\n\texternal = {mark} diff-external\n"
            f'[diff "drv"]\n\tcommand = {mark} diff-command\n'
            f'[diff "tc"]\n\ttextconv = {mark} textconv\n'
            f'[filter "cf"]\n\tclean = {mark} clean\n\tsmudge = {mark} smudge\n'
            f'\trequired = true\n[filter "pf"]\n\tprocess = {mark} process\n'
            f"{filter_config('a=b')}"
            f'[filter ""]\n\tclean = {mark} blank-clean\n\tsmudge = {mark} blank-smudge\n'
            f"\tprocess = {mark} blank-process\n\trequired = true\n"
            f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {gpg}\n"
            f"[credential]\n\thelper = {mark} credential\n"
            f"[include]\n\tpath = {included}\n"
        )
    home = root / "home"
    (home / "xdg" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text(filter_config("glob"))
    (home / "xdg" / "git" / "config").write_text(filter_config("xdg"))
    (root / "system.cfg").write_text(filter_config("sys"))
    environment = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "xdg"),
        "GIT_CONFIG_SYSTEM": str(root / "system.cfg"),
        "GIT_EXTERNAL_DIFF": f"{mark} env-external-diff",
        "GIT_CONFIG_PARAMETERS": f"'filter.envp.clean'='{mark} envp-clean'",
    }
    assert not os.listdir(marks)
    return Traps(repo, marks, environment)
