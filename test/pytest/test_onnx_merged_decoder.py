"""optimum's merged decoder (a real export, test/pytest/data/README.md): one graph whose `If` on
`use_cache_branch` runs the first step (no past) or a cached step. The branches give the
present key/value different lengths, so the If's results have no static shape until the branch
is known: `use_cache_branch` is bound like an input that decides shapes (one program per
branch and shapes) and the If folds to the branch taken. Greedy decoding, the whole loop, gives
onnxruntime's tokens and logits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import mlconv

MERGED = Path(__file__).parent / "data" / "whisper_tiny_decoder_model_merged.onnx"


def _greedy(step, names, outputs, encoder_states, steps):
    """Greedy tokens and every step's outputs; `step(feeds)` gives the outputs `outputs`
    (logits, then `present.*`, fed back as the `past_key_values.*` of the same name)."""
    batch = encoder_states.shape[0]
    tokens = np.ones((batch, 1), np.int64)  # decoder_start_token_id
    # The first step ignores the past (use_cache_branch false): any length-1 placeholder.
    past = {n: np.zeros((batch, 2, 1, 8), np.float32) for n in names if n.startswith("past")}
    out_tokens, all_logits = [], []
    for i in range(steps):
        feeds = {"input_ids": tokens, "encoder_hidden_states": encoder_states, **past}
        feeds["use_cache_branch"] = np.array([i > 0])
        logits, *presents = step(feeds)
        all_logits.append((logits, *presents))
        for name, value in zip(outputs[1:], presents, strict=True):
            # The cached step gives empty encoder presents: the encoder's stay from step one.
            if i == 0 or ".encoder." not in name:
                past[name.replace("present", "past_key_values")] = value
        tokens = np.argmax(logits[:, -1:, :], axis=-1).astype(np.int64)
        out_tokens.append(tokens)
    return np.concatenate(out_tokens, axis=1), all_logits


def test_merged_decoder_generates_as_onnxruntime():
    names = [i.name for i in onnx.load(MERGED).graph.input]
    outputs = [o.name for o in onnx.load(MERGED).graph.output]
    assert "use_cache_branch" in names and outputs[0] == "logits"
    session = ort.InferenceSession(str(MERGED))
    run = mlconv.compile(str(MERGED), quiet=True)
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        encoder_states = rng.standard_normal((batch, 1500, 16)).astype(np.float32)
        want_tokens, want_logits = _greedy(
            lambda f: session.run(None, f), names, outputs, encoder_states, steps=4
        )
        got_tokens, got_logits = _greedy(
            lambda f: run(**f), names, outputs, encoder_states, steps=4
        )
        np.testing.assert_array_equal(got_tokens, want_tokens)
        for got_step, want_step in zip(got_logits, want_logits, strict=True):
            for got, want in zip(got_step, want_step, strict=True):  # empty presents too
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert len(set(want_tokens.ravel())) > 1  # the tokens depend on the inputs
