"""Build the code bundle of the EMR jobs: ``metro-emr.zip`` (chalicelib + spark_emr, for --py-files) and the
job entry scripts, optionally uploaded to S3.

    python infra/emr/package.py [--out dist/emr] [--upload s3://code-bucket/metro/<stage>/<version>]

EMR Serverless (infra/emr/serverless.py, the default) uploads the same bundle and scripts itself, with the
environment archive of infra/emr/venv.py, and runs ``--py-files`` (``spark.submit.pyFiles``) .../metro-emr.zip.
On an EC2 cluster (the alternative), every step runs ``spark-submit --deploy-mode cluster --py-files
s3://.../metro-emr.zip s3://.../jobs/<job>.py ...``, and the nodes get Python 3.11 with exactly
infra/emr/requirements-emr.txt from infra/emr/bootstrap.sh, a bootstrap action: both are uploaded beside the bundle.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chalicelib", "spark_emr")
JOBS = ("compact", "retention", "metrics", "replay")


def build_zip(out_dir: Path, root: Path = ROOT) -> Path:
    """Write ``out_dir/metro-emr.zip`` with the two packages (sources only, sorted, fixed timestamps)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "metro-emr.zip"
    files = sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            info = zipfile.ZipInfo(str(path.relative_to(root)), date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return target


def copy_jobs(out_dir: Path, root: Path = ROOT) -> list[Path]:
    jobs_dir = out_dir / "jobs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for job in JOBS:
        dst = jobs_dir / f"{job}.py"
        shutil.copyfile(root / "spark_emr" / f"{job}.py", dst)
        out.append(dst)
    return out


def upload(out_dir: Path, s3_uri: str) -> list[str]:
    """Upload the bundle under ``s3://bucket/prefix``; return the uploaded URIs."""
    import boto3

    if not s3_uri.startswith("s3://"):
        raise SystemExit(f"--upload wants s3://bucket/prefix, got {s3_uri!r}")
    bucket, _, prefix = s3_uri[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    s3 = boto3.client("s3")
    uris = []
    extras = [out_dir / name for name in ("bootstrap.sh", "requirements-emr.txt")]
    for path in [out_dir / "metro-emr.zip", *sorted((out_dir / "jobs").glob("*.py")), *extras]:
        key = f"{prefix}/{path.relative_to(out_dir)}" if prefix else str(path.relative_to(out_dir))
        s3.upload_file(str(path), bucket, key)
        uris.append(f"s3://{bucket}/{key}")
    return uris


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "dist" / "emr"))
    p.add_argument("--upload", default="", help="s3://bucket/prefix to upload the bundle to")
    args = p.parse_args(argv)
    out = Path(args.out)
    z = build_zip(out)
    jobs = copy_jobs(out)
    for name in ("bootstrap.sh", "requirements-emr.txt"):
        shutil.copyfile(ROOT / "infra" / "emr" / name, out / name)
    print(f"built {z} ({z.stat().st_size} bytes) and {len(jobs)} job scripts in {out / 'jobs'}")
    if args.upload:
        for uri in upload(out, args.upload):
            print("uploaded", uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
