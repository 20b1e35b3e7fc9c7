"""Command line of the generator: ``python -m codegen generate|check|diff|lock``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen import generate as build
from codegen.config import REPO_ROOT
from codegen.lock import LockMismatchError, write_lock
from codegen.prepass import SchemaError
from codegen.protocol_diff import diff_bundles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("generate", help="write generated/ from spec/")
    commands.add_parser("check", help="fail with a diff when generated/ is stale")
    commands.add_parser("lock", help="record the current spec hashes in spec/lock.json")
    diff = commands.add_parser("diff", help="print the protocol changes between two MSP bundles")
    diff.add_argument("old", type=Path, help="spec/msp/<old version> (folder or msp.schema.json)")
    diff.add_argument("new", type=Path, help="spec/msp/<new version> (folder or msp.schema.json)")
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            written = build.generate()
            for path in written:
                print(f"wrote {path.relative_to(REPO_ROOT).as_posix()}")
            print("generated/ is current" if not written else f"{len(written)} file(s) updated")
        elif args.command == "check":
            stale = build.check()
            if stale:
                sys.stdout.write(stale)
                print("generated/ is stale; run `nox -s codegen`", file=sys.stderr)
                return 1
            print("generated/ matches spec/")
        elif args.command == "lock":
            changed = write_lock()
            print("\n".join(f"locked spec/{name}" for name in changed) or "lock unchanged")
        else:
            sys.stdout.write(diff_bundles(args.old, args.new))
    except (LockMismatchError, SchemaError) as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
