"""The one weights format (`jaxgames.weights_io`): round trip, checksum, finite values, clear errors, shipped folders.

Issue 27 ("one weights format"), issue 30 items 2 and 3 (corrupted and non-finite weights refused, naming the file).
The expected checksums are computed here with `hashlib` from the bytes on disk, not taken from the code under test.
"""

import hashlib
import json
import re
import shutil

import jax
import numpy as np
import pytest
from flax import serialization

from jaxgames import weights_io
from jaxgames.agents import alphazero as az
from jaxgames.agents import ddpg
from jaxgames.agents import q_snake as qa
from jaxgames.networks import ddpg as ddpg_nets

SHIPPED = {
    "alphazero_dab": lambda d: az.load_weights(d),
    "alphazero_onitama": lambda d: az.load_weights(d),
    "q_snake": lambda d: qa.load_weights(d),
}
"""Each shipped folder under ``jaxgames/weights/`` and its agent module's loader."""


def _params():
    """A small pytree with the leaf kinds of our networks: float32 kernels, a scalar, an int counter."""
    return {
        "params": {"Dense_0": {"kernel": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
                               "bias": np.float32([-0.0, 1e-30, 3])}},
        "batch_stats": {"mean": np.float32([0.5]), "count": np.int32([7])},
    }


def _assert_bitwise_equal(a, b):
    pa, pb = jax.tree_util.tree_leaves_with_path(a), jax.tree_util.tree_leaves_with_path(b)
    assert [jax.tree_util.keystr(k) for k, _ in pa] == [jax.tree_util.keystr(k) for k, _ in pb]
    for (k, x), (_, y) in zip(pa, pb):
        x, y = np.asarray(x), np.asarray(y)
        assert (x.dtype, x.shape, x.tobytes()) == (y.dtype, y.shape, y.tobytes()), jax.tree_util.keystr(k)


def _write_folder(directory, params, metadata):
    """A weights folder written by hand (flax msgpack, JSON with the bytes' sha256), bypassing `save`'s checks."""
    directory.mkdir(parents=True, exist_ok=True)
    data = serialization.to_bytes(params)
    (directory / "params.msgpack").write_bytes(data)
    meta = {**metadata, "format": weights_io.FORMAT, "sha256": hashlib.sha256(data).hexdigest()}
    (directory / "metadata.json").write_text(json.dumps(meta))


def test_round_trip_is_bitwise_and_records_the_checksum(tmp_path):
    params = _params()
    out = weights_io.save(tmp_path / "w", params, {"network": {"width": 3}, "trained": False, "sha256": "stale"})
    assert out == tmp_path / "w" and sorted(p.name for p in out.iterdir()) == ["metadata.json", "params.msgpack"]
    meta_on_disk = json.loads((out / "metadata.json").read_text())
    assert meta_on_disk["sha256"] == hashlib.sha256((out / "params.msgpack").read_bytes()).hexdigest()
    loaded, meta = weights_io.load(out)
    _assert_bitwise_equal(loaded, params)
    assert meta == meta_on_disk and meta["network"] == {"width": 3} and meta["trained"] is False
    assert meta["format"] == weights_io.FORMAT


def test_a_flipped_byte_is_refused_naming_the_file(tmp_path):
    weights_io.save(tmp_path, _params(), {})
    path = tmp_path / "params.msgpack"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # inside the last array's bytes: the file still decodes, to another value
    path.write_bytes(bytes(data))
    serialization.msgpack_restore(bytes(data))  # still a valid msgpack: only the checksum can tell
    with pytest.raises(ValueError, match=r"params\.msgpack is corrupted"):
        weights_io.load(tmp_path)


def test_non_finite_parameters_are_refused_naming_the_file_and_leaf(tmp_path):
    bad = _params()
    bad["params"]["Dense_0"]["bias"][1] = np.nan
    with pytest.raises(ValueError, match=r"\['Dense_0'\]\['bias'\].*non-finite"):
        weights_io.save(tmp_path / "s", bad, {})
    assert not (tmp_path / "s" / "params.msgpack").exists()
    _write_folder(tmp_path / "l", bad, {})  # a correct checksum of NaN weights
    with pytest.raises(ValueError, match=r"l/params\.msgpack: leaf \['params'\]\['Dense_0'\]\['bias'\] has 1 non"):
        weights_io.load(tmp_path / "l")
    bad["params"]["Dense_0"]["bias"][1] = np.inf
    _write_folder(tmp_path / "i", bad, {})
    with pytest.raises(ValueError, match="non-finite"):
        weights_io.load(tmp_path / "i")


def test_a_truncated_file_is_refused_with_its_path(tmp_path):
    weights_io.save(tmp_path, _params(), {})
    path = tmp_path / "params.msgpack"
    short = path.read_bytes()[:-10]
    path.write_bytes(short)
    with pytest.raises(ValueError, match=re.escape(f"{path} is corrupted")):
        weights_io.load(tmp_path)
    # the same truncated bytes with a checksum that matches them: decoding fails, and says where
    meta = json.loads((tmp_path / "metadata.json").read_text())
    meta["sha256"] = hashlib.sha256(short).hexdigest()
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=re.escape(f"{path} cannot be decoded")):
        weights_io.load(tmp_path)


def test_bad_metadata_missing_files_and_old_folders_give_errors_naming_the_path(tmp_path):
    weights_io.save(tmp_path / "w", _params(), {"trained": True})
    meta_path = tmp_path / "w" / "metadata.json"
    text = meta_path.read_text()
    meta_path.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=re.escape(f"{meta_path} is not valid JSON")) as info:
        weights_io.load(tmp_path / "w")
    assert info.type is ValueError  # not a bare json.JSONDecodeError
    meta_path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        weights_io.load(tmp_path / "w")
    with pytest.raises(FileNotFoundError, match=re.escape(f"no weights folder {tmp_path / 'nowhere'}")):
        weights_io.load(tmp_path / "nowhere")
    meta_path.unlink()
    with pytest.raises(FileNotFoundError, match=re.escape(f"no weights file {meta_path}")):
        weights_io.load(tmp_path / "w")
    # a folder of the old Q-snake format: refused with the way out, which converts it bit for bit
    old = tmp_path / "old"
    old.mkdir()
    (old / "q_snake.msgpack").write_bytes(serialization.msgpack_serialize(_params()))
    (old / "q_snake.json").write_text(json.dumps({"features": [4], "board_size": 7}))
    with pytest.raises(FileNotFoundError, match="older format.*weights_io.upgrade"):
        weights_io.load(old)
    weights_io.upgrade(old)
    assert sorted(p.name for p in old.iterdir()) == ["metadata.json", "params.msgpack"]
    params, meta = weights_io.load(old)
    _assert_bitwise_equal(params, _params())
    assert meta["features"] == [4] and meta["board_size"] == 7
    # an old AlphaZero folder (the right names, no checksum): refused, naming the file and the way out
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "params.msgpack").write_bytes(serialization.to_bytes(_params()))
    (legacy / "metadata.json").write_text(json.dumps({"trained": True}))
    with pytest.raises(ValueError, match=r"legacy/metadata\.json has no checksum.*upgrade"):
        weights_io.load(legacy)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_folder_loads_and_its_checksum_verifies(name, tmp_path):
    folder = az.WEIGHTS_DIR.parent / name
    files = sorted(p.name for p in folder.iterdir() if not p.name.startswith("_"))
    assert files == ["README.md", "metadata.json", "params.msgpack"]  # no file of the old names left
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["sha256"] == hashlib.sha256((folder / "params.msgpack").read_bytes()).hexdigest()
    params, loaded_meta = SHIPPED[name](folder)  # the agent module's checks (network shape) on top
    assert loaded_meta["sha256"] == meta["sha256"] and isinstance(loaded_meta["trained"], bool)
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(params))
    # the shipped file with one flipped byte is refused by the agent's loader (it loaded silently before)
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    data = bytearray((copy / "params.msgpack").read_bytes())
    data[len(data) // 2] ^= 0x10
    (copy / "params.msgpack").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=re.escape(f"{copy / 'params.msgpack'} is corrupted")):
        SHIPPED[name](copy)


def test_agent_modules_share_the_format(tmp_path):
    """Each agent module's save_weights writes the shared folder, and its metadata check runs on load."""
    actor = ddpg_nets.Actor("dual", (4,), 2, (8,), "layer")
    params = jax.device_get(ddpg_nets.init_actor(jax.random.key(0), actor))
    network = {"conv_features": [4], "card_features": 2, "hidden": [8], "norm": "layer"}
    ddpg.save_weights(tmp_path / "a", "dual", params, network, {"iterations": 3})
    raw, meta = weights_io.load(tmp_path / "a")
    _assert_bitwise_equal(raw, params)
    assert meta["variant"] == "dual" and meta["iterations"] == 3
    agent = ddpg.load_agent(tmp_path / "a")
    _assert_bitwise_equal(agent.params, params)
    meta.pop("norm")
    weights_io.save(tmp_path / "a", raw, meta)
    with pytest.raises(ValueError, match=r"a/metadata\.json lacks \['norm'\]"):
        ddpg.load_weights(tmp_path / "a")
