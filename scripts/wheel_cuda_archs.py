"""Which GPU architectures a vLLM or torch wheel carries kernels for, read from the wheel itself.

    python scripts/wheel_cuda_archs.py WHEEL [WHEEL ...]

WHEEL: a wheel as PyPI ships it (`pip download --no-deps vllm==X`, or `pip download --no-deps torch==X --platform
manylinux_2_28_x86_64 --python-version 3.11 --only-binary=:all:`). For vLLM the library read is its own kernels,
vllm/_C.abi3.so (vllm/_C_stable_libtorch.abi3.so in the releases that ship that instead); for torch,
torch/lib/libtorch_cuda.so. Printed per wheel: the torch the vLLM wheel requires (Requires-Dist), and the compute
capabilities of the machine code (ELF cubins) in the library's `.nv_fatbin` section, with how many fat binaries hold
each. A GPU runs the wheel only if its compute capability has cubins there: no PTX is compiled for it (`CUDA error:
no kernel image is available for execution on the device` otherwise). Needs `objcopy` (binutils) to cut the section
out; sizing/data/vllm_engines.yaml `lowest_compute_capability` records what this printed.

Fat binary layout (the CUDA fatbin container, as cuobjdump reads it): a header (magic 0xBA55ED50, u16 version, u16
header size, u64 size of the entries), then entries, each a header (u16 kind: 1 PTX, 2 ELF; u16 version; u32 header
size; u32 padded payload size; ...; u32 SM version at byte 28) followed by its payload.
"""

from __future__ import annotations

import argparse
import collections
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MAGIC = struct.pack("<I", 0xBA55ED50)
LIBRARIES = (r"vllm/_C\.abi3\.so", r"vllm/_C_stable_libtorch\.abi3\.so", r"torch/lib/libtorch_cuda\.so")


def fatbin_archs(section: bytes) -> collections.Counter:
    """(kind, SM) -> how many fat binaries of the section hold an entry of that kind for that SM."""
    found: collections.Counter = collections.Counter()
    at = 0
    while (at := section.find(MAGIC, at)) >= 0:
        _, _, header, size = struct.unpack_from("<IHHQ", section, at)
        entry, end = at + header, at + header + size
        while entry + 32 <= min(end, len(section)):
            kind, _, entry_header, payload = struct.unpack_from("<HHII", section, entry)
            if not 0 < entry_header <= 1024:
                break
            found[(kind, struct.unpack_from("<I", section, entry + 28)[0])] += 1
            entry += entry_header + payload
        at = max(end, at + 4)
    return found


def read(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        library = next((n for pattern in LIBRARIES for n in names if re.fullmatch(pattern, n)), None)
        if library is None:
            return f"{wheel.name}: no CUDA library ({', '.join(LIBRARIES)})"
        meta = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        torch = ""
        if meta and library.startswith("vllm/"):
            pins = re.findall(r"^Requires-Dist: (torch==[^\s;]+)", z.read(meta).decode(), re.M)
            torch = f" requires {pins[0]};" if pins else ""
        with tempfile.TemporaryDirectory() as tmp:
            so, section = Path(tmp) / "lib.so", Path(tmp) / "fatbin"
            so.write_bytes(z.read(library))
            subprocess.run(
                ["objcopy", f"--dump-section=.nv_fatbin={section}", str(so), str(Path(tmp) / "out")],
                check=True,
                capture_output=True,
            )
            archs = fatbin_archs(section.read_bytes())
    cubins = sorted({sm for kind, sm in archs if kind == 2})
    shown = ", ".join(f"{sm // 10}.{sm % 10}" for sm in cubins)
    return f"{wheel.name}:{torch} {library} has machine code for compute capability {shown}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    for wheel in ap.parse_args().wheels:
        print(read(wheel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
