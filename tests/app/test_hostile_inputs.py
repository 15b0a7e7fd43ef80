"""What a hostile student tries against a shared server, beyond the pages' own tests: model
specs that probe the server's file system, and links longer than a server's request line."""

from __future__ import annotations

import shutil
import urllib.parse
import urllib.request

import pytest

import model
from model import ModelLoadError, load
from model.policy import LoadPolicy


def refusal(spec: str, policy: LoadPolicy) -> str:
    with pytest.raises(ModelLoadError) as caught:
        load(spec, device="cpu", policy=policy)
    return str(caught.value)


@pytest.fixture
def server_folder(tmp_path, monkeypatch):
    """A server's working directory holding a folder, a file and a checkpoint-like folder, and
    an allowed folder elsewhere (empty)."""
    work, allowed = tmp_path / "work", tmp_path / "allowed"
    for folder in (work / "org" / "name", work / "models", allowed):
        folder.mkdir(parents=True)
    (work / "models" / "config.json").write_text("{}")
    (work / "notes.txt").write_text("private")
    monkeypatch.chdir(work)
    return allowed


@pytest.mark.parametrize("hub", [False, True])
def test_every_spec_outside_the_allowed_folders_gets_the_same_message(server_folder, hub,
                                                                     monkeypatch):
    from model.hf import checkpoints

    monkeypatch.setattr(checkpoints, "_hub_reachable", lambda timeout=3.0: False)
    policy = LoadPolicy(folders=(server_folder.resolve(),), hub=hub)
    # paths: relative or absolute, existing or not, ~ and ~user of a user who exists or not
    paths = ("./models", "./nowhere", "./notes.txt", "../work", "../nowhere", "/etc", "/nowhere",
             "~", "~/nowhere", "~root/x", "~root", "~nosuchuser/x", "~nosuchuser",
             "models/", "org/name/", "nowhere/x/y/z")
    assert len({refusal(spec, policy) for spec in paths}) == 1
    # names like hub ids: a hub id whether or not the working directory holds that name
    names = ("models", "nowhere", "notes.txt", "nowhere.txt", "org/name", "org/nowhere")
    said = {refusal(spec, policy).replace(repr(spec), "SPEC") for spec in names}
    assert len(said) == 1 and "SPEC" in said.pop()


def test_a_hub_id_that_names_a_folder_of_the_working_directory_never_reads_it(
        server_folder, tiny_checkpoints, tmp_path, monkeypatch):
    import huggingface_hub.constants

    # the hub's org/name in the Hugging Face cache: the tiny BERT
    hub_cache = tmp_path / "hub"
    repo = hub_cache / "models--org--name"
    shutil.copytree(tiny_checkpoints["bert"], repo / "snapshots" / ("0" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub_cache))
    # the working directory's org/name: a GPT-2, which must not be read
    shutil.rmtree("org/name")
    shutil.copytree(tiny_checkpoints["gpt2"], "org/name")
    policy = LoadPolicy(folders=(server_folder.resolve(),), hub=False)
    assert load("org/name", device="cpu", policy=policy).family is model.Family.ENCODER_ONLY
    # on one's own machine (no allowed folders) the folder is what the name means
    assert load("org/name", device="cpu").family is model.Family.DECODER_ONLY


def test_a_user_of_no_such_home_is_a_path_that_is_not_there():
    with pytest.raises(ModelLoadError, match="no checkpoint folder at ~nosuchuser/x"):
        load("~nosuchuser/x", device="cpu")


@pytest.mark.slow
def test_a_link_with_a_text_of_a_hundred_thousand_characters_opens_the_app():
    from tests.helpers import served_app

    with served_app() as url:
        for text in ("The cat sat on the mat. " * 4200, "猫坐在垫子上。" * 14300):
            assert len(text) >= 100_000
            link = f"{url}/explore?" + urllib.parse.urlencode({"text": text, "lang": "en"})
            with urllib.request.urlopen(link, timeout=60) as response:
                assert response.status == 200
                assert b"<!doctype html>" in response.read(2000).lower()
