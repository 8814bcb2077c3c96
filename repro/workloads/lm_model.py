"""The `lm` workload's model, as numbers (pure, standard library only): Llama 3 shapes, parameter counts, model
FLOPs per token and the sourced peak FLOP/s MFU divides by.

Shapes (no weights: the tokens are synthetic) are those of Meta's Llama 3.2 1B / 3B and Llama 3.1 8B
(`params.json` and the model cards): dim, layers, heads, key/value heads, feed-forward width, vocabulary, RoPE
theta. Llama 3.2 1B and 3B tie the output projection to the token embedding (their Hugging Face configs:
`tie_word_embeddings: true`); 8B does not. `tiny` is repro's own: the same blocks, small enough to train in
seconds on one CPU core.

Model FLOPs per token of a training step (forward and backward), the convention of PaLM (appendix B) and
torchtitan's `get_num_flop_per_token`:

    flops_per_token = 6 * N + 12 * L * H * Q * T

N: the weights a token is multiplied by (every layer, the final norm and the output projection; the embedding
lookup is not a matmul and is left out, as torchtitan does; a tied output projection counts once, as the matmul
it is), L layers, H attention heads, Q = dim / H, T the sequence length. Causal masking is not discounted and
activation recomputation is not counted: MFU counts the model's FLOPs, not the hardware's.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOPS_CONVENTION = "6*N + 12*L*H*Q*T (N: non-embedding weights incl. the output projection; PaLM app. B, torchtitan)"


@dataclass(frozen=True)
class Shape:
    """A decoder-only Llama-style transformer's shape."""

    name: str
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    rope_theta: float = 500000.0
    tied: bool = False  # the output projection is the embedding's matrix
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def layer_params(self) -> int:
        """Weights of one block: attention (q, k, v, o), SwiGLU (three matrices), two RMSNorm scales."""
        kv = self.kv_heads * self.head_dim
        attention = self.dim * self.dim * 2 + self.dim * kv * 2
        return attention + 3 * self.dim * self.ffn_hidden + 2 * self.dim

    def params(self) -> int:
        """Every parameter of the model (a tied output projection once)."""
        embedding = self.vocab * self.dim
        head = 0 if self.tied else self.vocab * self.dim
        return embedding + self.layers * self.layer_params() + self.dim + head

    def matmul_params(self) -> int:
        """N of the FLOPs convention: the layers, the final norm and the output projection."""
        return self.layers * self.layer_params() + self.dim + self.vocab * self.dim

    def flops_per_token(self, seq_len: int) -> int:
        """Model FLOPs per trained token: 6N + 12*L*H*Q*T (module docstring)."""
        return 6 * self.matmul_params() + 12 * self.layers * self.heads * self.head_dim * seq_len


PRESETS: dict[str, Shape] = {
    "tiny": Shape("tiny", dim=64, layers=2, heads=4, kv_heads=2, ffn_hidden=192, vocab=512, rope_theta=10000.0),
    "llama3-1b": Shape("llama3-1b", dim=2048, layers=16, heads=32, kv_heads=8, ffn_hidden=8192, vocab=128256,
                       tied=True),
    "llama3-3b": Shape("llama3-3b", dim=3072, layers=28, heads=24, kv_heads=8, ffn_hidden=8192, vocab=128256,
                       tied=True),
    "llama3-8b": Shape("llama3-8b", dim=4096, layers=32, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256),
}
MODELS = tuple(PRESETS)
DEFAULT_SEQ_LEN = {"tiny": 128, "llama3-1b": 2048, "llama3-3b": 2048, "llama3-8b": 2048}

# Peak dense tensor FLOP/s per device by precision (datasheets print twice these "with sparsity"), matched on the
# device name in this order (the first name contained wins, so the H100 variants come before plain H100).
# Sources: NVIDIA H100 datasheet (SXM 989.4, NVL 835, PCIe 756 TFLOPS BF16 dense), H200 datasheet (989), A100
# datasheet (312), B200 (DGX B200 spec: 2.25 PFLOPS dense BF16 per GPU), AMD MI300X datasheet (1307.4); the same
# figures as torchtitan's get_peak_flops. No fp32 entries: FP32 and TF32 peaks are other figures, and MFU is
# stated for the precision the run used or not at all (CPUs: none).
PEAK_FLOPS: tuple[tuple[str, str, float, str], ...] = (
    ("H100 NVL", "bf16", 835e12, "NVIDIA H100 NVL datasheet, dense BF16"),
    ("H100 PCIe", "bf16", 756e12, "NVIDIA H100 PCIe datasheet, dense BF16"),
    ("H100", "bf16", 989e12, "NVIDIA H100 SXM datasheet, dense BF16"),
    ("H200", "bf16", 989e12, "NVIDIA H200 datasheet, dense BF16"),
    ("A100", "bf16", 312e12, "NVIDIA A100 datasheet, dense BF16"),
    ("B200", "bf16", 2.25e15, "NVIDIA DGX B200 specification, dense BF16 per GPU"),
    ("MI300X", "bf16", 1307.4e12, "AMD Instinct MI300X datasheet, dense BF16"),
)


def peak_flops(device: str, precision: str) -> tuple[float, str] | None:
    """(peak FLOP/s, its source) of `device` (a name such as 'GPU:0 NVIDIA H100 80GB HBM3') at `precision`, or
    None where no sourced figure is known (every CPU; fp32 anywhere)."""
    for name, prec, flops, source in PEAK_FLOPS:
        if name.lower() in device.lower() and prec == precision:
            return flops, source
    return None


def mfu(tokens_per_sec_per_device: float | None, flops_per_token: float | None, peak: float | None) -> float | None:
    """Model FLOPs utilisation: tokens/sec per device x FLOPs per token / the device's peak (None without one)."""
    if not tokens_per_sec_per_device or not flops_per_token or not peak:
        return None
    return tokens_per_sec_per_device * flops_per_token / peak
