"""bench/device_wheels.py on the CPU: the SGLang wheel without its native libraries (the real
wheel, every Python file byte for byte), a wheel's importable top-level names, and the choice of
what to install on a machine that already has some of the packages."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from benchscripts import load

dw = load("device_wheels")

pytestmark = pytest.mark.network


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_stripped_sglang_wheel_keeps_every_python_file(tmp_path: Path, wheels) -> None:
    src = wheels.wheel_path("sglang", dw.SGLANG_VERSION)
    dest = tmp_path / src.name
    kept, dropped = dw.strip_native(src, dest)
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dest) as b:
        names_a, names_b = set(a.namelist()), set(b.namelist())
        native = {n for n in names_a if n.endswith(".so")}
        assert dropped == len(native) > 0 and kept == len(names_b)
        assert names_b == names_a - native
        for name in (n for n in names_b if n.endswith(".py")):
            assert b.read(name) == a.read(name), name
        assert any(n.endswith(".dist-info/METADATA") for n in names_b)
    assert dest.stat().st_size < src.stat().st_size * 0.7


def test_top_levels_from_top_level_txt_or_members(tmp_path: Path) -> None:
    zmq = _wheel(tmp_path / "pyzmq-1-cp312-abi3-x.whl", {
        "zmq/__init__.py": b"", "pyzmq.libs/libzmq.so.5": b"", "pyzmq-1.dist-info/RECORD": b""})
    assert dw.wheel_top_levels(zmq) == {"zmq", "pyzmq.libs"}
    te = _wheel(tmp_path / "typing_extensions-1-py3-none-any.whl", {
        "typing_extensions.py": b"", "typing_extensions-1.dist-info/RECORD": b""})
    assert dw.wheel_top_levels(te) == {"typing_extensions"}
    ipy = _wheel(tmp_path / "ipython-1-py3-none-any.whl", {
        "IPython/__init__.py": b"", "ipython-1.dist-info/top_level.txt": b"IPython\n"})
    assert dw.wheel_top_levels(ipy) == {"IPython"}


def test_installs_only_what_the_interpreter_lacks(tmp_path: Path) -> None:
    have = _wheel(tmp_path / "packaging-1-py3-none-any.whl", {"packaging/__init__.py": b""})
    lack = _wheel(tmp_path / "orjson-1-cp312-cp312-x.whl", {"orjson/__init__.py": b"", "orjson.libs/x.so": b""})
    private = _wheel(tmp_path / "cffi-1-cp312-cp312-x.whl", {"_cffi_backend.cpython-312-x86_64-linux-gnu.so": b""})
    present = {"packaging"}
    need = dw.missing_wheels([have, lack, private], importable=lambda n: n in present)
    assert need == [private, lack]  # sorted by name; `orjson.libs` is not a module to look for
    present |= {"orjson", "_cffi_backend"}
    assert dw.missing_wheels([have, lack, private], importable=lambda n: n in present) == []


def test_install_refuses_an_empty_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dw.main(["install", str(tmp_path), str(tmp_path / "site")]) == 2
    assert "no wheels" in capsys.readouterr().err


def test_prune_present_drops_the_targets_own_distributions(tmp_path: Path) -> None:
    keep = _wheel(tmp_path / "pydantic_core-2-cp312-cp312-x.whl", {"pydantic_core/__init__.py": b""})
    drop = _wheel(tmp_path / "Typing_Extensions-4-py3-none-any.whl", {"typing_extensions.py": b""})
    have_file = tmp_path / "have.txt"
    have_file.write_text("# image\ntorch, typing-extensions\nnumpy  # comment\n")
    have = dw.read_have(have_file)
    assert have == {"torch", "typing-extensions", "numpy"}
    assert dw.prune_present([keep, drop], have) == [drop]
    assert keep.exists() and not drop.exists()


def test_shipped_image_list_names_the_h200_images_torch_stack() -> None:
    have = dw.read_have(Path(dw.__file__).with_name("h200_image_packages.txt"))
    assert {"torch", "triton", "numpy", "aiohttp", "pygments"} <= have
    assert not have & {"orjson", "pydantic-core", "msgspec"}  # what the v53 suite lacked and must travel


def test_download_refuses_a_missing_have_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dw.main(["download", str(tmp_path / "out"), "--have", str(tmp_path / "nope.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
