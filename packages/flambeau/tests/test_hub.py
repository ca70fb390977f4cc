"""flambeau.hub: local hubconf (load/list/help as torch.hub's), the GitHub cache, downloads (a file://
URL stands for the network, which this machine does not reach) and the offline errors."""

import hashlib
import os
import textwrap
import urllib.error

import flambeau as fb
import pytest
import torch

HUBCONF = textwrap.dedent(
    '''
    dependencies = ["numpy"]
    import helper  # the repository's own module, found on the hubconf's folder

    def tiny(n=2, bias=True):
        """A Linear(n, 1) layer."""
        return helper.make(n, bias)

    def _private():
        pass

    CONSTANT = 3
    '''
)
HELPER = textwrap.dedent(
    """
    def make(n, bias):
        try:
            import flambeau as lib
        except ImportError:
            raise
        return lib.nn.Linear(n, 1, bias=bias)
    """
)
TORCH_HELPER = HELPER.replace("import flambeau as lib", "import torch as lib")


def write_repo(folder, helper=HELPER, hubconf=HUBCONF):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hubconf.py").write_text(hubconf)
    (folder / "helper.py").write_text(helper)
    return str(folder)


@pytest.fixture
def hub_dir(tmp_path):
    old = fb.hub.get_dir()
    fb.hub.set_dir(tmp_path / "hub")
    yield tmp_path / "hub"
    fb.hub.set_dir(old)


def forget_helper():
    import sys

    sys.modules.pop("helper", None)


def test_local_load_list_help_as_torch(tmp_path):
    ours = write_repo(tmp_path / "ours")
    theirs = write_repo(tmp_path / "theirs", TORCH_HELPER)
    forget_helper()
    m = fb.hub.load(ours, "tiny", 3, source="local", bias=False)
    forget_helper()
    t = torch.hub.load(theirs, "tiny", 3, source="local", bias=False)
    forget_helper()
    assert type(m) is fb.nn.Linear and m.weight.shape == t.weight.shape == (1, 3) and m.bias is t.bias is None
    assert fb.hub.list(ours, source="local") == ["tiny"]  # source=: flambeau's addition to list and help
    assert fb.hub.help(ours, "tiny", source="local") == "A Linear(n, 1) layer."


def test_local_errors(tmp_path):
    folder = write_repo(tmp_path / "repo")
    forget_helper()
    with pytest.raises(RuntimeError, match=r"\[hub\] cannot find callable nothing in hubconf"):
        fb.hub.load(folder, "nothing", source="local")
    forget_helper()
    with pytest.raises(RuntimeError, match="Cannot find callable nothing in hubconf"):
        torch.hub.load(folder, "nothing", source="local")
    with pytest.raises(FileNotFoundError, match=r"\[hub\] no hubconf.py in"):
        fb.hub.load(str(tmp_path), "tiny", source="local")
    with pytest.raises(ValueError, match=r'\[hub\] unknown source: "svn"'):
        fb.hub.load(folder, "tiny", source="svn")
    missing = write_repo(tmp_path / "missing", hubconf=HUBCONF.replace('["numpy"]', '["no_such_package_x"]'))
    forget_helper()
    with pytest.raises(RuntimeError, match=r"\[hub\] missing dependencies of .*: no_such_package_x"):
        fb.hub.load(missing, "tiny", source="local")


def test_github_repo_from_cache_without_network(hub_dir, tmp_path):
    write_repo(hub_dir / "someone_models_main")
    forget_helper()
    assert fb.hub.load("someone/models", "tiny", n=4).weight.shape == (1, 4)
    forget_helper()
    assert fb.hub.list("someone/models") == ["tiny"]
    forget_helper()
    old = torch.hub.get_dir()
    torch.hub.set_dir(str(tmp_path / "torch_hub"))
    try:  # torch.hub reads its cache the same way
        write_repo(tmp_path / "torch_hub" / "someone_models_main", TORCH_HELPER)
        t = torch.hub.load("someone/models:main", "tiny", n=4, trust_repo=True)
        assert t.weight.shape == (1, 4)
        forget_helper()
        assert torch.hub.list("someone/models:main", trust_repo=True) == fb.hub.list("someone/models:main")
        forget_helper()
        assert torch.hub.help("someone/models:main", "tiny", trust_repo=True) == fb.hub.help("someone/models", "tiny")
    finally:
        torch.hub.set_dir(old)
        forget_helper()
    write_repo(hub_dir / "someone_models_v1.0")
    forget_helper()
    assert fb.hub.load("someone/models:v1.0", "tiny").weight.shape == (1, 2)


def test_github_repo_offline_error_names_the_repo(hub_dir, monkeypatch):
    monkeypatch.setattr(fb.hub, "_TIMEOUT_S", 5)
    with pytest.raises(urllib.error.URLError) as info:
        fb.hub.load("someone/absent:v2", "tiny")
    message = str(info.value)
    assert "the repository someone/absent:v2" in message and "https://github.com/someone/absent/zipball/v2" in message
    assert "no network is reachable" in message and "source='local'" in message
    with pytest.raises(ValueError, match=r"\[hub\] invalid repository"):
        fb.hub.load("not a repo", "tiny")


def test_download_and_state_dict_from_url(tmp_path, hub_dir):
    src = tmp_path / "weights.pt"
    model = fb.nn.Linear(2, 2)
    fb.save(model.state_dict(), str(src))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dst = tmp_path / "copy" / "w.pt"
    fb.hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix=digest[:8])
    assert dst.read_bytes() == src.read_bytes()
    with pytest.raises(RuntimeError, match=r"\[hub\] invalid hash value"):
        fb.hub.download_url_to_file(src.as_uri(), str(tmp_path / "bad.pt"), hash_prefix="0000zz")
    assert not (tmp_path / "bad.pt").exists() and [p for p in os.listdir(tmp_path) if p.endswith(".partial")] == []
    named = tmp_path / f"linear-{digest[:10]}.pt"
    named.write_bytes(src.read_bytes())
    state = fb.hub.load_state_dict_from_url(named.as_uri(), check_hash=True)
    assert (hub_dir / "checkpoints" / named.name).exists()
    assert state["weight"].tolist() == model.weight.tolist()
    # torch reads the same file: the checkpoint format is PyTorch's
    tstate = torch.hub.load_state_dict_from_url(named.as_uri(), model_dir=str(tmp_path / "t"), weights_only=True)
    assert tstate["weight"].tolist() == model.weight.tolist()
    named.unlink()  # now only the cached copy exists: no download
    assert fb.hub.load_state_dict_from_url(named.as_uri())["bias"].tolist() == model.bias.tolist()


def test_download_unreachable_names_the_url(tmp_path, monkeypatch):
    monkeypatch.setattr(fb.hub, "_TIMEOUT_S", 5)
    url = "http://127.0.0.1:9/model.pt"  # the discard port: refused at once
    with pytest.raises(urllib.error.URLError) as info:
        fb.hub.download_url_to_file(url, str(tmp_path / "m.pt"))
    assert url in str(info.value) and "no network is reachable" in str(info.value)
    assert str(tmp_path / "m.pt") in str(info.value)
    with pytest.raises(urllib.error.URLError, match="no network is reachable"):
        fb.hub.load_state_dict_from_url(url, model_dir=str(tmp_path))


def test_get_dir_default_and_env(monkeypatch):
    old = fb.hub._hub_dir
    try:
        fb.hub._hub_dir = None
        monkeypatch.setenv("FLAMBEAU_HOME", "/tmp/fbhome")
        assert fb.hub.get_dir() == "/tmp/fbhome/hub"
        monkeypatch.delenv("FLAMBEAU_HOME")
        monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg")
        assert fb.hub.get_dir() == "/tmp/xdg/flambeau/hub"
    finally:
        fb.hub._hub_dir = old
