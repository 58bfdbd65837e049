"""Tiny random-config decoders (Llama, Qwen2, Phi-3 style) with a KV cache, exported to ONNX by
torch.onnx.export(dynamo=True) with optimum's input and output names, and a greedy decoding
loop that runs any `run(feeds) -> outputs` callable (mlconv's or onnxruntime's) the same way.

Inputs: input_ids, attention_mask, position_ids (int64), past_key_values.{i}.key/.value
(float32, batch x kv_heads x past x head_dim); outputs: logits, present.{i}.key/.value.
Weights are seeded random (std 0.5 on the embeddings and the head, so the logits depend on the
tokens and greedy decoding does not settle on one token).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

CONFIGS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
    "phi3": ("Phi3Config", "Phi3ForCausalLM"),
}
VOCABULARY = 128
LAYERS = 2
KV_HEADS = 2
HEAD_DIM = 16


def build_decoder(kind: str, seed: int = 0):
    import torch
    import transformers

    config_name, model_name = CONFIGS[kind]
    torch.manual_seed(seed)
    config = getattr(transformers, config_name)(
        vocab_size=VOCABULARY, hidden_size=64, intermediate_size=128,
        num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=KV_HEADS,
        max_position_embeddings=1024, tie_word_embeddings=False, pad_token_id=0,
    )  # fmt: skip
    model = getattr(transformers, model_name)(config).eval()
    with torch.no_grad():
        torch.nn.init.normal_(model.model.embed_tokens.weight, std=0.5)
        torch.nn.init.normal_(model.lm_head.weight, std=0.5)
    return model


def input_names() -> list[str]:
    names = ["input_ids", "attention_mask", "position_ids"]
    for i in range(LAYERS):
        names += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
    return names


def output_names() -> list[str]:
    names = ["logits"]
    for i in range(LAYERS):
        names += [f"present.{i}.key", f"present.{i}.value"]
    return names


def export_decoder(kind: str, path: str | Path, seed: int = 0) -> Path:
    """Write the decoder `kind` (llama, qwen2, phi3) to `path` with the dynamo exporter."""
    import torch
    from transformers.cache_utils import DynamicCache

    model = build_decoder(kind, seed)

    class WithPast(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, position_ids, past):  # noqa: D102
            cache = DynamicCache(config=self.inner.config)
            for i in range(LAYERS):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                past_key_values=cache, use_cache=True, return_dict=True,
            )  # fmt: skip
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    batch, sequence, past = 1, 3, 5
    example = (
        torch.ones(batch, sequence, dtype=torch.int64),
        torch.ones(batch, past + sequence, dtype=torch.int64),
        torch.arange(past, past + sequence, dtype=torch.int64)[None],
        [torch.randn(batch, KV_HEADS, past, HEAD_DIM) for _ in range(2 * LAYERS)],
    )
    b = torch.export.Dim("batch_size", min=1, max=64)
    s = torch.export.Dim("sequence_length", min=1, max=4096)
    p = torch.export.Dim("past_sequence_length", min=1, max=4096)
    total = torch.export.Dim("total_sequence_length", min=2, max=8192)
    shapes = (
        {0: b, 1: s},
        {0: b, 1: total},
        {0: b, 1: s},
        [{0: b, 2: p} for _ in range(2 * LAYERS)],
    )
    path = Path(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            WithPast(model), example, str(path), input_names=input_names(),
            output_names=output_names(), dynamic_shapes=shapes, dynamo=True,
            external_data=True, verbose=False, optimize=True,
        )  # fmt: skip
    return path


def export_optimum(kind: str, folder: str | Path, python: str) -> Path:
    """The decoder `kind` (seeded as `build_decoder`) exported by optimum's
    `text-generation-with-past` task into `folder`, run by `python` (an interpreter with
    optimum-onnx, which pins transformers < 4.58: a venv of its own, see shared/NOTES.md)."""
    import subprocess

    folder = Path(folder)
    subprocess.run(
        [python, __file__, "optimum", kind, str(folder)], check=True, capture_output=True
    )
    return folder / "onnx" / "model.onnx"


def _optimum_main(kind: str, folder: str) -> None:
    from optimum.exporters.onnx import main_export

    build_decoder(kind).save_pretrained(f"{folder}/hf")
    main_export(f"{folder}/hf", output=f"{folder}/onnx", task="text-generation-with-past")


def greedy(run, prompt: np.ndarray, new_tokens: int, on_token=None) -> list[int]:
    """Greedy decoding of `new_tokens` tokens after `prompt` (1-D int64), optimum's loop: the
    prompt in one call (after a past of one zero position, masked out: the export's dims start
    at 1), then one token per call, the past growing by one.
    `run(feeds: dict) -> list of arrays` in output_names() order; `on_token(i)` after each."""
    feeds = {
        "input_ids": prompt[None].astype(np.int64),
        "attention_mask": np.concatenate([[0], np.ones(len(prompt), np.int64)])[None],
        "position_ids": np.arange(len(prompt), dtype=np.int64)[None],
    }
    for i in range(LAYERS):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = np.zeros((1, KV_HEADS, 1, HEAD_DIM), np.float32)
    tokens: list[int] = []
    position = len(prompt)
    for step in range(new_tokens):
        outputs = run(feeds)
        token = int(np.argmax(outputs[0][0, -1]))
        tokens.append(token)
        if on_token is not None:
            on_token(step)
        feeds = {
            "input_ids": np.array([[token]], np.int64),
            "attention_mask": np.concatenate(
                [feeds["attention_mask"], np.ones((1, 1), np.int64)], axis=1
            ),
            "position_ids": np.array([[position]], np.int64),
        }
        position += 1
        for i in range(LAYERS):
            feeds[f"past_key_values.{i}.key"] = np.asarray(outputs[1 + 2 * i])
            feeds[f"past_key_values.{i}.value"] = np.asarray(outputs[2 + 2 * i])
    return tokens


if __name__ == "__main__":  # python decoder_models.py optimum KIND FOLDER (export_optimum)
    import sys

    _optimum_main(sys.argv[2], sys.argv[3])
