"""Which GGUF architectures a transformers release reads a config from, read from the wheel itself.

    python scripts/transformers_gguf_archs.py WHEEL [WHEEL ...]

WHEEL: `pip download --no-deps transformers==X`. vLLM reads a local GGUF file's config through transformers
(`get_config` passes `gguf_file=` to `PretrainedConfig.get_config_dict`, vllm 0.10.0 and 0.18.1
transformers_utils/config.py), whose `load_gguf_checkpoint` (modeling_gguf_pytorch_utils.py) raises "GGUF model with
architecture {arch} is not supported yet." unless the file's `general.architecture`, or the name it renames it to,
is a key of GGUF_SUPPORTED_ARCHITECTURES (the keys of integrations/ggml.py GGUF_CONFIG_MAPPING). Printed per wheel,
as the rows of sizing/data/gguf_transformers.yaml: those keys as the wheel holds them (`general` and `tokenizer`
among them: the check takes them too) and the renames (a substring of the architecture -> the key it is read as).
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

# `if "qwen2moe" in architecture: updated_architecture = "qwen2_moe"`, `elif "gpt_oss" in architecture or "gpt-oss" in
# architecture: ...` and the like: each quoted substring of the condition renames to the name set under it
RENAME = re.compile(r'if ((?:"[\w-]+" in architecture(?: or )?)+):\s*\n\s*updated_architecture = "(\w+)"')
# the T5 branch: `elif "t5" in architecture or "t5encoder" in architecture:` ... `updated_architecture = "t5"`
T5 = re.compile(r'"t5" in architecture')


def read(wheel: Path) -> tuple[str, list[str], dict[str, str]]:
    with zipfile.ZipFile(wheel) as z:
        version = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")).split("-")[1].split(".dist")[0]
        ggml = ast.parse(z.read("transformers/integrations/ggml.py"))
        loader = z.read("transformers/modeling_gguf_pytorch_utils.py").decode()
    keys = next(
        [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
        for node in ggml.body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "GGUF_CONFIG_MAPPING" for t in node.targets)
        and isinstance(node.value, ast.Dict)
    )
    if 'GGUF_SUPPORTED_ARCHITECTURES = list(GGUF_TO_TRANSFORMERS_MAPPING["config"].keys())' not in loader:
        sys.exit(f"{wheel}: GGUF_SUPPORTED_ARCHITECTURES is no longer GGUF_CONFIG_MAPPING's keys; read it by hand")
    renames = {
        frm: to
        for condition, to in RENAME.findall(loader)
        for frm in re.findall(r'"([\w-]+)"', condition)
        if frm != "llama"  # llama (with "mistral" in the name) -> mistral: both are keys in every release
    }
    if T5.search(loader):
        renames["t5"] = "t5"
    return version, sorted(keys), renames


def main() -> None:
    for wheel in sys.argv[1:]:
        version, keys, renames = read(Path(wheel))
        print(
            f'  "{version}": {{architectures: [{", ".join(keys)}], renames: {{{", ".join(f"{k}: {v}" for k, v in renames.items())}}}}}'
        )


if __name__ == "__main__":
    main()
