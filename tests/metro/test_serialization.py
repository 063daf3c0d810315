"""metro.serialization: safetensors + manifest + ONNX, verified on load, for every model kind."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
import torch

from metro.models import ModelSpec, build_model
from metro.serialization import (
    FORMAT_VERSION,
    ModelFormatError,
    load_model,
    predict_labels,
    read_manifest,
    save_model,
)

KINDS = [
    (ModelSpec("linear"), (6,)),
    (ModelSpec("mlp", hidden=(8, 4)), (6,)),
    (ModelSpec("cnn3", channels=(4, 6, 8)), (3, 8, 8)),
]


def _model(spec, shape, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(2.0, 3.0, size=(32, *shape)).astype(np.float32)
    model = build_model(spec, input_shape=shape, n_models=1, X_stats=X, seed=seed)
    with torch.no_grad():  # linear models start at zero: give them weights worth checking
        for p in model.parameters():
            p.add_(torch.from_numpy(rng.normal(size=tuple(p.shape)).astype(np.float32)))
    return model.eval(), X


@pytest.mark.parametrize(("spec", "shape"), KINDS, ids=[s.kind for s, _ in KINDS])
def test_round_trip_and_onnx_agree_with_torch(tmp_path, spec, shape):
    import onnxruntime as ort

    model, X = _model(spec, shape)
    names = [f"f{i}" for i in range(shape[0])] if len(shape) == 1 else None
    manifest = save_model(
        tmp_path / "m",
        model,
        manifest={
            "metric": {"preset": "f1"},
            "lambda_star": np.float64(-0.25),
            "threshold": 0.5,
            "labels": {"positive": "yes", "negative": "no"},
            "feature_names": names,
            "job_id": "abc",
        },
    )
    files = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert files == ["manifest.json", "model.onnx", "model.safetensors"]
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["architecture"] == spec.to_dict()
    assert manifest["input_shape"] == list(shape)
    assert manifest["n_features"] == int(np.prod(shape))
    assert manifest["lambda_star"] == -0.25 and manifest["threshold"] == 0.5
    assert manifest["job_id"] == "abc" and manifest["feature_names"] == names
    assert json.loads((tmp_path / "m" / "manifest.json").read_text()) == manifest

    loaded, read = load_model(tmp_path / "m", expected_sha256=manifest["weights_sha256"])
    assert read == manifest
    for name, tensor in model.tensors().items():
        assert torch.equal(loaded.tensors()[name], tensor), name

    x = X[:9]
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
        assert np.array_equal(loaded(torch.from_numpy(x)).numpy(), expected)
    session = ort.InferenceSession(str(tmp_path / "m" / "model.onnx"))
    (out,) = session.run(None, {"x": x})
    assert out.shape == (9, 1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    (one,) = session.run(None, {"x": x[:1]})  # the batch dimension is dynamic
    np.testing.assert_allclose(one, expected[:1], rtol=1e-5, atol=1e-5)


def test_fsspec_target_and_no_onnx():
    model, _ = _model(ModelSpec("linear"), (3,))
    url = f"memory://metro-test-{uuid.uuid4().hex}/model"
    manifest = save_model(url, model, onnx=False)
    assert manifest["onnx_sha256"] is None
    assert manifest["labels"] == {"positive": 1, "negative": 0} and manifest["threshold"] == 0.0
    loaded, _ = load_model(url)
    assert torch.equal(loaded.weight, model.weight)


def test_tampered_weights_and_wrong_digest_are_refused(tmp_path):
    model, _ = _model(ModelSpec("linear"), (3,))
    manifest = save_model(tmp_path, model, onnx=False)
    with pytest.raises(ModelFormatError, match="sha256"):
        load_model(tmp_path, expected_sha256="0" * 64)
    data = bytearray((tmp_path / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="sha256"):
        load_model(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ModelFormatError, match="missing"):
        load_model(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1}))
    with pytest.raises(ModelFormatError, match="format_version"):
        read_manifest(tmp_path)


def test_refuses_stacks_bad_fields_and_computed_keys(tmp_path):
    stack = build_model(ModelSpec("linear"), input_shape=(3,), n_models=2)
    with pytest.raises(ValueError, match="one model"):
        save_model(tmp_path, stack)
    one = stack.select([0])
    with pytest.raises(ValueError, match="computed"):
        save_model(tmp_path, one, manifest={"weights_sha256": "x"})
    with pytest.raises(ValueError, match="feature names"):
        save_model(tmp_path, one, manifest={"feature_names": ["a"]})
    with pytest.raises(ValueError, match="threshold"):
        save_model(tmp_path, one, manifest={"threshold": float("nan")})
    with pytest.raises(ValueError, match="labels"):
        save_model(tmp_path, one, manifest={"labels": {"yes": 1}})
    assert not (tmp_path / "manifest.json").exists()


@pytest.mark.parametrize(("spec", "shape"), KINDS, ids=[s.kind for s, _ in KINDS])
def test_a_model_of_several_classes_round_trips_with_one_score_per_class(tmp_path, spec, shape):
    import onnxruntime as ort

    model, X = _model(spec, shape)
    stack = model.select([0, 0, 0])
    with torch.no_grad():
        getattr(stack, stack.last_bias_name).add_(torch.tensor([0.0, 1.0, -1.0]))
    manifest = save_model(
        tmp_path, stack, manifest={"classes": ["a", "b", "c"], "decision": "argmax"}
    )
    assert manifest["classes"] == ["a", "b", "c"] and manifest["labels"] is None
    loaded, _ = load_model(tmp_path)
    assert loaded.n_models == 3
    with torch.no_grad():
        expected = stack(torch.from_numpy(X[:5])).numpy()
    (out,) = ort.InferenceSession(str(tmp_path / "model.onnx")).run(None, {"x": X[:5]})
    assert out.shape == (5, 3)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="one of 'classes' per model"):
        save_model(tmp_path / "x", stack)
    with pytest.raises(ValueError, match="one class per model"):
        save_model(tmp_path / "x", stack, manifest={"classes": ["a"], "decision": "argmax"})
    with pytest.raises(ValueError, match="decision"):
        save_model(tmp_path / "x", stack, manifest={"classes": ["a", "b", "c"]})
    text = json.loads((tmp_path / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps({**text, "classes": ["a", "b"]}))
    with pytest.raises(ModelFormatError, match="one model per class"):
        load_model(tmp_path)


def test_decision_rule_is_score_at_least_threshold():
    assert predict_labels(np.array([-1.0, 0.0, 0.5]), 0.0).tolist() == [False, True, True]
    assert predict_labels(np.array([0.49, 0.5]), 0.5).tolist() == [False, True]


@pytest.mark.parametrize(
    ("target", "remote"),
    [
        ("s3://bucket/models", True),
        ("S3://bucket/models", True),
        ("gs://b/p", True),
        ("file:///srv/models", False),
        ("FILE:///srv/models", False),
        ("File:///srv/models", False),
        ("/srv/models", False),
        ("relative/models", False),
    ],
)
def test_is_url_is_one_rule_for_every_store(target, remote):
    """The library, the artifact store and the upload store share it (they disagreed on case)."""
    from metro.serialization import is_url

    assert is_url(target) is remote


@pytest.mark.parametrize(
    ("target", "path"),
    [("file:///srv/models", "/srv/models"), ("FILE:///srv/m", "/srv/m"), ("/srv/m", "/srv/m")],
)
def test_local_path_drops_a_file_scheme(target, path):
    from pathlib import Path

    from metro.serialization import local_path

    assert local_path(target) == Path(path)  # not Path("file:/srv/models"), a relative path


def _recording_fsync(monkeypatch):
    """os.fsync, recording the kind of each flushed descriptor ('file' or 'directory')."""
    import os
    import stat

    synced: list[str] = []
    real = os.fsync

    def fsync(fd):
        synced.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_a_saved_file_is_flushed_to_disk_and_so_is_its_name(tmp_path, monkeypatch):
    from metro.serialization import write_atomically

    synced = _recording_fsync(monkeypatch)
    target = tmp_path / "new" / "model.json"
    write_atomically(target, b"{}")
    assert target.read_bytes() == b"{}"
    # The bytes before the rename, the directory's entry after it: a crash then can leave the
    # old file or the new one, never an empty or truncated one under the new name.
    assert synced == ["file", "directory"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    import os

    from metro.serialization import write_atomically

    target = tmp_path / "manifest.json"
    target.write_bytes(b"old")

    def broken(fd):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk gone"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_save_model_flushes_every_file(tmp_path, monkeypatch):
    synced = _recording_fsync(monkeypatch)
    model, _ = _model(ModelSpec("linear"), (6,))
    save_model(tmp_path / "m", model, manifest={"threshold": 0.0}, onnx=False)
    assert synced == ["file", "directory"] * 2  # the weights, then the manifest
