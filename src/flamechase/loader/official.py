"""The `official` index: the releases of the built-in flows, shipped with flamechase.

`official.json` beside this module lists each built-in flow (not its variants) with its
version, the SHA-256 of its code (loader/identity.py) and its variants, each with theirs. It is
generated from the code (`python -m flamechase.loader.official --write`) and a test regenerates
it and compares, so it cannot go stale. Installing from it needs no network: the code is the
one this flamechase ships, and installing checks that it still hashes as the index records
(a release is its code, not its name). An installed release records its hash and is checked
again at every load.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from flamechase.errors import FlowIndexError
from flamechase.loader import installed

if TYPE_CHECKING:
    from flamechase.flow import Flow

NAME = "official"
FILE = "official.json"
# What an installed record's url says for a release of the official index.
URL_PREFIX = "builtin:"


class Variant(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    version: str
    code_hash: str


class Release(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    version: str
    description: str = ""
    code_hash: str
    variants: tuple[Variant, ...] = ()


def generate() -> dict[str, Any]:
    """The index as the code of this flamechase makes it."""
    from flamechase.flows import BUILTIN, VARIANTS
    from flamechase.loader import load_flow
    from flamechase.loader.identity import code_hash

    flows = []
    for name in sorted(BUILTIN):
        flow = load_flow(name)
        variants = []
        for vname in sorted(k for k in VARIANTS if k.startswith(name + ":")):
            variant = load_flow(vname)
            variants.append(
                {"name": vname, "version": variant.version, "code_hash": code_hash(variant)}
            )
        flows.append(
            {
                "name": name,
                "version": flow.version,
                "description": flow.summary,
                "code_hash": code_hash(flow),
                "variants": variants,
            }
        )
    return {"index": NAME, "flows": flows}


def releases() -> list[Release]:
    """Every release of the bundled index."""
    text = resources.files(__package__ or "flamechase.loader").joinpath(FILE).read_text("utf-8")
    return [Release.model_validate(r) for r in json.loads(text)["flows"]]


def pick(spec: str) -> Release:
    name, _, version = spec.partition("@")
    found = {r.name: r for r in releases()}
    release = found.get(name)
    if release is None:
        raise FlowIndexError(
            f"index {NAME} has no flow {name!r}; it has: {', '.join(sorted(found))}"
        )
    if version and version.lstrip("v") != release.version.lstrip("v"):
        raise FlowIndexError(
            f"index {NAME} has no version {version} of {name}; it has {release.version} "
            "(the one this flamechase ships)"
        )
    return release


def install(spec: str) -> installed.Installed:
    """Install the release `NAME[@VERSION]` of the official index, with its variants."""
    release = pick(spec)
    _check(release.name, release.code_hash, "install")
    for variant in release.variants:
        _check(variant.name, variant.code_hash, "install")
    record = installed.Installed(
        name=release.name,
        version=release.version,
        description=release.description,
        url=URL_PREFIX + release.name,
        commit="",
        index=NAME,
        code_hash=release.code_hash,
        variants=[v.name for v in release.variants],
    )
    installed.save(record)
    return record


def is_official(record: installed.Installed) -> bool:
    return record.index == NAME and record.url.startswith(URL_PREFIX)


def verify(record: installed.Installed, ref: str) -> None:
    """Refuse to run an installed official release whose code is no longer the one installed
    (flamechase was upgraded since): installing again takes the release it now ships."""
    _check(ref, record.code_hash if ref == record.name else _variant_hash(record, ref), "load")


def _variant_hash(record: installed.Installed, ref: str) -> str:
    for release in releases():
        if release.name == record.name and release.version == record.version:
            return next((v.code_hash for v in release.variants if v.name == ref), "")
    return ""


def _check(ref: str, recorded: str, doing: str) -> None:
    from flamechase.flows import BUILTIN, VARIANTS
    from flamechase.loader.identity import code_hash

    if ref not in BUILTIN and ref not in VARIANTS:
        raise FlowIndexError(f"index {NAME} lists {ref}, which this flamechase does not ship")
    got = code_hash(builtin(ref))
    if got == recorded:
        return
    if doing == "install":
        raise FlowIndexError(
            f"index {NAME}: {ref} hashes {got[:12]}, not the {recorded[:12]} the index records; "
            "this flamechase's official index is stale (python -m flamechase.loader.official "
            "--write)"
        )
    raise FlowIndexError(
        f"installed {ref} ({NAME}, code {recorded[:12]}) is not the code this flamechase ships "
        f"({got[:12]}); `flamechase flows install {ref.partition(':')[0]}` installs that one"
    )


def builtin(ref: str) -> Flow[Any]:
    import importlib

    from flamechase.flows import BUILTIN, VARIANTS
    from flamechase.loader import modules

    module = BUILTIN.get(ref) or VARIANTS[ref]
    return modules.flow_in(importlib.import_module(module), None, ref)


def main(argv: list[str]) -> int:
    """`python -m flamechase.loader.official [--write]`: print (or write) the index."""
    text = json.dumps(generate(), indent=1) + "\n"
    if "--write" in argv:
        target = resources.files(__package__ or "flamechase.loader").joinpath(FILE)
        with resources.as_file(target) as path:
            path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
