"""Command line of the generator: ``python -m codegen generate|check|diff|lock|ingest``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen import generate as build
from codegen.config import REPO_ROOT, SPEC_DIR
from codegen.fit import fit_report
from codegen.ingest import IngestError, default_cache_dir, fetch_wheel, ingest
from codegen.lock import LockMismatchError, write_lock
from codegen.prepass import SchemaError
from codegen.protocol_diff import diff_bundles
from codegen.surface import drift_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("generate", help="write generated/ from spec/")
    commands.add_parser("check", help="fail with a diff when generated/ is stale")
    commands.add_parser("lock", help="record the current spec hashes in spec/lock.json")
    diff = commands.add_parser("diff", help="print the protocol changes between two MSP bundles")
    diff.add_argument("old", type=Path, help="spec/msp/<old version> (folder or msp.schema.json)")
    diff.add_argument("new", type=Path, help="spec/msp/<new version> (folder or msp.schema.json)")
    take = commands.add_parser(
        "ingest", help="build spec/msp/<version>/ from the release's official declarations wheel"
    )
    take.add_argument("version", help="Muse host version, e.g. 1.4.4")
    take.add_argument(
        "--package",
        help="version of the muse-code-msp package holding that host's declarations, when it "
        "differs (e.g. 1.3.1 for host 1.3.0)",
    )
    take.add_argument("--wheel", type=Path, help="the muse-code-msp wheel (else fetched with pip)")
    take.add_argument("--fingerprint", help="refuse unless the wheel declares this fingerprint")
    take.add_argument("--spec-dir", type=Path, default=SPEC_DIR, help="spec folder to write into")
    take.add_argument("--cache-dir", type=Path, default=None, help="where fetched wheels are kept")
    take.add_argument("--replace", action="store_true", help="overwrite a hand-written bundle")
    take.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail unless the bundle is what it rebuilds",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            written = build.generate()
            for path in written:
                print(f"wrote {path.relative_to(REPO_ROOT).as_posix()}")
            print("generated/ is current" if not written else f"{len(written)} file(s) updated")
        elif args.command == "check":
            stale = build.check()
            drifted = drift_report(SPEC_DIR)
            if drifted:
                sys.stdout.write(drifted)
                print(
                    "an ingested bundle differs from its release; fix it or declare the "
                    "deviation in its x-msp-deviations",
                    file=sys.stderr,
                )
                return 1
            unfit = fit_report(SPEC_DIR)
            if unfit:
                sys.stdout.write(unfit)
                print(
                    "the vocabulary (spec/msp-vocabulary) would refuse what these bundles "
                    "allow; relax it there (the member optional or nullable, the enum open)",
                    file=sys.stderr,
                )
                return 1
            if stale:
                sys.stdout.write(stale)
                print("generated/ is stale; run `nox -s codegen`", file=sys.stderr)
                return 1
            print("generated/ matches spec/")
        elif args.command == "lock":
            changed = write_lock()
            print("\n".join(f"locked spec/{name}" for name in changed) or "lock unchanged")
        elif args.command == "ingest":
            package = args.package or args.version
            wheel = args.wheel or fetch_wheel(package, args.cache_dir or default_cache_dir())
            written = ingest(
                args.version,
                wheel,
                args.spec_dir,
                package=package,
                fingerprint=args.fingerprint,
                replace=args.replace,
                check=args.check,
            )
            if args.check:
                print(f"spec/msp/{args.version} is exactly what {wheel.name} rebuilds")
            else:
                print("\n".join(f"wrote {path}" for path in written))
        else:
            sys.stdout.write(diff_bundles(args.old, args.new))
    except (LockMismatchError, SchemaError, IngestError) as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
