"""Where the package finds its data (base/data_dir.h through _fpconform.data_path): the variable,
then the package's data/ folder (an installed wheel), then the source tree the module was built
from. ci/python_test.sh runs this file in the build tree and against the installed wheel."""
from pathlib import Path

import pytest

import fpconform
from fpconform import _fpconform as _C

# (function, variable, name in data/, path in the source tree)
ITEMS = [
    (fpconform.models_dir, "FPCONFORM_MODELS_DIR", "models", "accumulation/models"),
    (fpconform.composite_models_dir, "FPCONFORM_COMPOSITE_MODELS_DIR", "composite-models", "composite/models"),
    (fpconform.attention_models_dir, "FPCONFORM_ATTENTION_MODELS_DIR", "attention-models",
     "composite/attention_models"),
    (fpconform.sweep_file, "FPCONFORM_SWEEP_FILE", "standard_sweep.toml", "reports/standard_sweep.toml"),
]
PACKAGE_DATA = Path(fpconform.__file__).resolve().parent / "data"


@pytest.mark.parametrize("fn,env,name,source", ITEMS, ids=[i[2] for i in ITEMS])
def test_default_is_the_package_data_else_the_source_tree(fn, env, name, source, monkeypatch):
    monkeypatch.delenv(env, raising=False)
    got = Path(fn())
    assert got.exists(), got
    if PACKAGE_DATA.is_dir():
        assert got == PACKAGE_DATA / name
    else:
        assert got.as_posix().endswith("/" + source), got


@pytest.mark.parametrize("fn,env,name,source", ITEMS, ids=[i[2] for i in ITEMS])
def test_the_variable_comes_first_unless_empty(fn, env, name, source, tmp_path, monkeypatch):
    monkeypatch.delenv(env, raising=False)
    default = fn()
    monkeypatch.setenv(env, str(tmp_path / "mine"))
    assert fn() == str(tmp_path / "mine")
    monkeypatch.setenv(env, "")
    assert fn() == default


@pytest.mark.parametrize("fn,env,name,source", ITEMS, ids=[i[2] for i in ITEMS])
def test_an_installed_folder_is_the_whole_answer(fn, env, name, source, tmp_path, monkeypatch):
    """With a data folder, every item comes from it, even one it lacks (its reader then names the
    installed path), never from the source tree the module was built from."""
    monkeypatch.delenv(env, raising=False)
    assert not (tmp_path / name).exists()
    assert _C.data_path(name, str(tmp_path)) == str(tmp_path / name)
    assert _C.data_path(name, "").endswith("/" + source)


def test_an_unknown_item_is_refused():
    with pytest.raises(ValueError, match="no data item named 'model'"):
        _C.data_path("model", "")
