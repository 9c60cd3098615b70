"""The store's part in the two deployment stages, on moto: the build stages a candidate, the serving check
fetches it with every file checked, publishes its passing report, then the build's manifest, in that order."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from store_support import BUCKET, one_line_error, passing_report

from triton_mme.cli import main
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import SERVING_REPORT_FILE_NAME
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import read_published_manifest, upload_build
from triton_mme.store.stages import PublishError, fetch_candidate, publish_serving_report, require_passing

FINGERPRINT = "e" * 64
RUN = "e" * 43 + "-11111111-2222-3333-4444-555555555555"  # the engine's execution name
STORE = ["--bucket", BUCKET]


def candidate_key(manifest: Manifest) -> str:
    return f"manifests/builds/{FINGERPRINT}/candidate-{manifest.sha256}.json"


def staged_key(shard: int, run: str = RUN) -> str:
    return f"manifests/builds/{FINGERPRINT}/runs/{run}/shard-{shard}.json"


@pytest.fixture
def staged(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Manifest]:
    """The build stage's end: archives and files uploaded, the candidate staged and recorded for this run."""
    build_dir, manifest = built
    upload_build(ModelStoreClient(s3, BUCKET), build_dir, make_live=False)
    assert main(["stage-candidate", "--from", str(build_dir), "--fingerprint", FINGERPRINT, "--run", RUN,
                 *STORE]) == 0  # fmt: skip
    assert capsys.readouterr().out == f"candidate s3://{BUCKET}/{candidate_key(manifest)} written\n"
    return build_dir, manifest


def test_the_candidate_is_the_manifest_under_its_fingerprint_and_nothing_reads_it_as_one(
    s3: Any, staged: tuple[Path, Manifest]
) -> None:
    _, manifest = staged
    body = s3.get_object(Bucket=BUCKET, Key=candidate_key(manifest))["Body"].read()
    assert body == manifest.to_json().encode()
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="manifests/builds/")["Contents"]]
    # The candidate and, for one build, shard 0's record of it in this run; no build manifest yet: only the
    # serving check publishes one.
    assert keys == [candidate_key(manifest), staged_key(0)]
    record = s3.get_object(Bucket=BUCKET, Key=staged_key(0))["Body"].read()
    assert json.loads(record) == {"candidate": manifest.sha256}


def test_a_candidate_naming_files_not_uploaded_is_refused(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    build_dir, _ = built
    command = ["stage-candidate", "--from", str(build_dir), "--fingerprint", FINGERPRINT, "--run", RUN]
    assert main([*command, *STORE]) == 1
    assert "named in the manifest but not in the bucket; refusing to publish the manifest" in one_line_error(
        capsys
    )
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="manifests/builds/").get("KeyCount") == 0  # nor a record


def test_the_check_stage_fetches_the_candidate_and_every_file_it_names(
    s3: Any, staged: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_dir, manifest = staged
    to = tmp_path / "fetched"
    assert main(["fetch-candidate", "--fingerprint", FINGERPRINT, "--run", RUN, "--to", str(to), *STORE]) == 0
    names = sorted([*manifest.target_models, *manifest.files, "manifest.json"])
    assert sorted(p.name for p in to.iterdir()) == names
    for name in names:
        assert (to / name).read_bytes() == (build_dir / name).read_bytes(), name


def test_a_file_whose_bytes_do_not_match_the_candidate_stops_the_fetch(
    s3: Any, staged: tuple[Path, Manifest], tmp_path: Path
) -> None:
    _, manifest = staged
    golden = sorted(name for name in manifest.files if name.startswith("golden-"))[0]
    s3.delete_object(Bucket=BUCKET, Key=f"manifests/{golden}")
    s3.put_object(Bucket=BUCKET, Key=f"manifests/{golden}", Body=b"other bytes")
    with pytest.raises(PublishError, match=rf"manifests/{golden}: its content does not match its name"):
        fetch_candidate(ModelStoreClient(s3, BUCKET), FINGERPRINT, manifest.sha256, tmp_path / "f")
    assert not (tmp_path / "f" / "manifest.json").exists()  # written last, so never beside a bad file


def test_a_shard_that_staged_nothing_in_this_run_is_one_line_naming_it(
    s3: Any, staged: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Shard 0 staged in RUN; neither another run's record nor another shard's stands in for it.
    for run, shard in (("other-run", 0), (RUN, 1)):
        command = ["fetch-candidate", "--fingerprint", FINGERPRINT, "--run", run, "--shard", str(shard)]
        assert main([*command, "--to", str(tmp_path), *STORE]) == 1
        assert one_line_error(capsys) == (
            f"error: s3://{BUCKET}/{staged_key(shard, run)}: build shard {shard} staged no candidate in run "
            f"{run} (the build stage stages one per shard, last)"
        )
    assert not (tmp_path / "manifest.json").exists()


def test_a_record_naming_a_candidate_that_is_not_there_is_one_line(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = "a" * 64
    s3.put_object(Bucket=BUCKET, Key=staged_key(0), Body=json.dumps({"candidate": missing}).encode())
    command = ["fetch-candidate", "--fingerprint", FINGERPRINT, "--run", RUN, "--to", str(tmp_path)]
    assert main([*command, *STORE]) == 1
    assert one_line_error(capsys) == (
        f"error: s3://{BUCKET}/manifests/builds/{FINGERPRINT}/candidate-{missing}.json: no such candidate "
        "(the build stage stages it)"
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"not json", "not JSON"),
        (b'{"candidate": 7}', 'not a staged shard\'s record; expected {"candidate": "<manifest sha256>"}'),
        (b'{"candidate": "' + b"a" * 5000 + b'"}', "bytes; allowed at most 4,096"),
    ],
    ids=["not-json", "wrong-shape", "too-large"],
)
def test_a_record_that_is_not_a_shards_record_is_one_line(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, problem: str
) -> None:
    s3.put_object(Bucket=BUCKET, Key=staged_key(0), Body=body)
    command = ["fetch-candidate", "--fingerprint", FINGERPRINT, "--run", RUN, "--to", str(tmp_path)]
    assert main([*command, *STORE]) == 1
    line = one_line_error(capsys)
    assert line.startswith(f"error: s3://{BUCKET}/{staged_key(0)}") and problem in line
    assert not (tmp_path / "manifest.json").exists()


def test_a_run_that_is_not_an_execution_name_is_refused_before_anything_is_written(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    build_dir, _ = built
    upload_build(ModelStoreClient(s3, BUCKET), build_dir, make_live=False)
    command = ["stage-candidate", "--from", str(build_dir), "--fingerprint", FINGERPRINT, "--run", "a/../b"]
    assert main([*command, *STORE]) == 1
    assert one_line_error(capsys) == (
        "error: run 'a/../b' is not a build run; allowed: 1 to 80 letters, digits, - and _ (the build engine "
        "sets MODEL_BUILD_FINGERPRINT and MODEL_BUILD_RUN)"
    )
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="manifests/builds/").get("KeyCount") == 0


def test_report_then_manifest_last_and_a_rerun_keeps_both(
    s3: Any, staged: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_dir, manifest = staged
    checked = tmp_path / "checked"
    shutil.copytree(build_dir, checked)
    (checked / SERVING_REPORT_FILE_NAME).write_text(passing_report(manifest).to_json())
    report_key = f"manifests/{manifest.sha256}.serving-report.json"
    build_key = f"manifests/builds/{FINGERPRINT}/manifest.json"

    assert main(["publish-report", "--from", str(checked), *STORE]) == 0
    assert capsys.readouterr().out == f"report   s3://{BUCKET}/{report_key} written\n"
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=build_key).get("KeyCount") == 0
    assert main(["publish-build", "--from", str(checked), "--fingerprint", FINGERPRINT, *STORE]) == 0
    assert s3.get_object(Bucket=BUCKET, Key=build_key)["Body"].read() == manifest.to_json().encode()

    # The same candidate checked again (the stage retried): a new passing report of it keeps the first.
    again = passing_report(manifest).model_copy(update={"server": "a second run"})
    (checked / SERVING_REPORT_FILE_NAME).write_text(again.to_json())
    capsys.readouterr()
    assert main(["publish-report", "--from", str(checked), *STORE]) == 0
    assert capsys.readouterr().out.endswith("kept (an earlier passing report of this manifest)\n")
    assert b'"server": "test"' in s3.get_object(Bucket=BUCKET, Key=report_key)["Body"].read()


def _report_with(manifest: Manifest, **changes: Any) -> Any:
    report = passing_report(manifest)
    return report.model_copy(update=changes)


def test_only_a_report_that_checked_every_archive_of_this_manifest_and_passed_publishes(
    built: tuple[Path, Manifest],
) -> None:
    _, manifest = built
    require_passing(passing_report(manifest), manifest, where="r")
    with pytest.raises(
        PublishError, match=r"r checked manifest 0+, not this build's .*; run serving-check again"
    ):
        require_passing(_report_with(manifest, manifest_sha256="0" * 64), manifest, where="r")
    first, *rest = passing_report(manifest).archives
    skipped = first.model_copy(update={"passed": False, "skipped": "a TensorRT plan on a CPU"})
    with pytest.raises(
        PublishError,
        match=rf"r: 1 archive not checked in a serving image \(first: {first.target_model}\)",
    ):
        require_passing(_report_with(manifest, archives=(skipped, *rest)), manifest, where="r")
    with pytest.raises(PublishError, match="r: 1 archive not checked"):
        require_passing(_report_with(manifest, archives=tuple(rest)), manifest, where="r")


def test_a_failing_report_is_never_published(s3: Any, built: tuple[Path, Manifest], tmp_path: Path) -> None:
    build_dir, manifest = built
    first, *rest = passing_report(manifest).archives
    failed = first.model_copy(update={"passed": False, "error": "output 'output' differs from the reference"})
    path = tmp_path / "report.json"
    path.write_text(_report_with(manifest, archives=(failed, *rest)).to_json())
    with pytest.raises(
        PublishError, match=f"{first.target_model} did not pass the serving check: output 'output'"
    ):
        publish_serving_report(ModelStoreClient(s3, BUCKET), build_dir, path)
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def shard_directories(build_dir: Path, manifest: Manifest, tmp_path: Path) -> list[tuple[Path, Manifest]]:
    """The build split as a fanned-out build writes it: a directory per model, each with its own manifest."""
    shards = []
    for name in sorted({record.name for record in manifest.archives}):
        records = tuple(record for record in manifest.archives if record.name == name)
        part = Manifest(archives=records)
        directory = tmp_path / f"shard-{name}"
        directory.mkdir()
        for file in {*part.target_models, *part.files}:
            shutil.copy(build_dir / file, directory / file)
        (directory / "manifest.json").write_text(part.to_json())
        shards.append((directory, part))
    return shards


def test_a_fanned_out_build_publishes_the_union_of_its_checked_shards(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_dir, manifest = built
    store = ModelStoreClient(s3, BUCKET)
    shards = shard_directories(build_dir, manifest, tmp_path)
    assert len(shards) == 2
    for index, (directory, _) in enumerate(shards):
        upload_build(store, directory, make_live=False)
        stage = ["stage-candidate", "--from", str(directory), "--fingerprint", FINGERPRINT, "--run", RUN]
        assert main([*stage, "--shard", str(index), *STORE]) == 0
    command = ["publish-build", "--fingerprint", FINGERPRINT, "--run", RUN, "--shards", "2", *STORE]
    # Each check shard fetches its own build shard's candidate.
    for index, (_, part) in enumerate(shards):
        fetched = tmp_path / f"fetched-{index}"
        fetch = ["fetch-candidate", "--fingerprint", FINGERPRINT, "--run", RUN, "--shard", str(index)]
        assert main([*fetch, "--to", str(fetched), *STORE]) == 0
        assert (fetched / "manifest.json").read_bytes() == part.to_json().encode()
    # A shard without its passing report publishes nothing.
    first, second = shards
    (first[0] / SERVING_REPORT_FILE_NAME).write_text(passing_report(first[1]).to_json())
    assert main(["publish-report", "--from", str(first[0]), *STORE]) == 0
    capsys.readouterr()
    assert main(command) == 1
    assert f"{second[1].sha256}.serving-report.json: no serving report of this manifest" in one_line_error(
        capsys
    )
    build_key = f"manifests/builds/{FINGERPRINT}/manifest.json"
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=build_key).get("KeyCount") == 0

    (second[0] / SERVING_REPORT_FILE_NAME).write_text(passing_report(second[1]).to_json())
    assert main(["publish-report", "--from", str(second[0]), *STORE]) == 0
    # More shards than staged in this run: the missing one is named, nothing is published.
    capsys.readouterr()
    assert main([*command[:-3], "3", *STORE]) == 1
    assert f"{staged_key(2)}: build shard 2 staged no candidate in run {RUN}" in one_line_error(capsys)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=build_key).get("KeyCount") == 0
    assert main(command) == 0
    # The union of the shards is the whole build's manifest, byte for byte.
    assert s3.get_object(Bucket=BUCKET, Key=build_key)["Body"].read() == manifest.to_json().encode()


def test_overlapping_shards_are_refused(s3: Any, staged: tuple[Path, Manifest], tmp_path: Path) -> None:
    build_dir, manifest = staged
    checked = tmp_path / "checked"
    shutil.copytree(build_dir, checked)
    (checked / SERVING_REPORT_FILE_NAME).write_text(passing_report(manifest).to_json())
    assert main(["publish-report", "--from", str(checked), *STORE]) == 0
    from triton_mme.store.stages import publish_checked_shards

    # Shard 1 recorded the same candidate as shard 0.
    s3.put_object(Bucket=BUCKET, Key=staged_key(1), Body=json.dumps({"candidate": manifest.sha256}).encode())
    with pytest.raises(PublishError, match="the shards' candidates overlap"):
        publish_checked_shards(ModelStoreClient(s3, BUCKET), FINGERPRINT, RUN, 2)
