"""The catalogue read back from the on-disk cache is the catalogue validated from its file:
equal (NaN defaults included), and a changed file is validated again, never answered from a
stale entry."""

from __future__ import annotations

import yaml

from twin.catalog.model import CATALOG_FILE, Catalog, load_catalog


def _fresh(path):
    return Catalog.model_validate(yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader))


def test_cached_catalogue_equals_the_validated_one(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    first = load_catalog.__wrapped__(CATALOG_FILE)  # validated, then stored
    assert len(list((tmp_path / "catalog").glob("*.pickle"))) == 1
    second = load_catalog.__wrapped__(CATALOG_FILE)  # read back
    fresh = _fresh(CATALOG_FILE)
    assert first == fresh and second == fresh
    # Figures compare (and hash) as fresh ones: their NaN defaults are the very same objects.
    fig, ref = second.chips["trn3"].p_idle, fresh.chips["trn3"].p_idle
    assert fig.si_uncertainty is ref.si_uncertainty and hash(fig) == hash(ref)


def test_changed_file_is_validated_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "hardware.yaml"
    text = CATALOG_FILE.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    before = load_catalog.__wrapped__(path)
    old = before.chips["trn3"].description
    path.write_text(text.replace(old, "changed", 1), encoding="utf-8")
    after = load_catalog.__wrapped__(path)
    assert after.chips["trn3"].description == "changed" and after == _fresh(path)
    assert len(list((tmp_path / "cache" / "catalog").glob("*.pickle"))) == 2


def test_damaged_entry_is_validated_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    load_catalog.__wrapped__(CATALOG_FILE)
    (entry,) = (tmp_path / "catalog").glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])
    assert load_catalog.__wrapped__(CATALOG_FILE) == _fresh(CATALOG_FILE)
