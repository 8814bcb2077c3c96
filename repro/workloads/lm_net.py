"""The `lm` workload's network in torch.nn: a decoder-only Llama-style transformer (imports torch; the numbers
are in repro.workloads.lm_model, which does not).

Blocks as Llama 3 has them: pre-norm RMSNorm (torch.nn.RMSNorm), rotary position embeddings on queries and
keys, grouped-query causal attention through torch.nn.functional.scaled_dot_product_attention (the key/value
heads shared by groups of query heads), a SwiGLU feed-forward (w2(silu(w1 x) * w3 x)), no biases. The output
projection is tied to the embedding where the shape says so. Activation checkpointing recomputes each block's
activations in the backward pass (torch.utils.checkpoint, non-reentrant).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .lm_model import Shape

# enable_gqa arrived in torch 2.5; before it the key/value heads are repeated for each query group
_GQA = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


def rope_tables(head_dim: int, seq_len: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotary angles, each (seq_len, head_dim // 2), in float32."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (batch, seq, heads, head_dim) rotated pairwise (even, odd) by the position's angles, as Meta's code does."""
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)
    even, odd = pairs[..., 0], pairs[..., 1]
    c, s = cos[None, : x.shape[1], None, :], sin[None, : x.shape[1], None, :]
    return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = shape.heads, shape.kv_heads, shape.head_dim
        self.wq = nn.Linear(shape.dim, shape.heads * shape.head_dim, bias=False)
        self.wk = nn.Linear(shape.dim, shape.kv_heads * shape.head_dim, bias=False)
        self.wv = nn.Linear(shape.dim, shape.kv_heads * shape.head_dim, bias=False)
        self.wo = nn.Linear(shape.heads * shape.head_dim, shape.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = apply_rope(self.wq(x).view(b, t, self.heads, self.head_dim), cos, sin).transpose(1, 2)
        k = apply_rope(self.wk(x).view(b, t, self.kv_heads, self.head_dim), cos, sin).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        if _GQA:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        else:
            groups = self.heads // self.kv_heads
            out = F.scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1),
                                                 is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.w1 = nn.Linear(shape.dim, shape.ffn_hidden, bias=False)
        self.w2 = nn.Linear(shape.ffn_hidden, shape.dim, bias=False)
        self.w3 = nn.Linear(shape.dim, shape.ffn_hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(shape.dim, eps=shape.norm_eps)
        self.attention = Attention(shape)
        self.ffn_norm = nn.RMSNorm(shape.dim, eps=shape.norm_eps)
        self.feed_forward = FeedForward(shape)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    """Token ids (batch, seq) -> logits (batch, seq, vocab)."""

    def __init__(self, shape: Shape, seq_len: int, *, checkpointing: bool = False) -> None:
        super().__init__()
        self.checkpointing = checkpointing
        self.tok_embeddings = nn.Embedding(shape.vocab, shape.dim)
        self.layers = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.norm = nn.RMSNorm(shape.dim, eps=shape.norm_eps)
        self.output = nn.Linear(shape.dim, shape.vocab, bias=False)
        if shape.tied:
            self.output.weight = self.tok_embeddings.weight
        cos, sin = rope_tables(shape.head_dim, seq_len, shape.rope_theta)
        # not parameters and not saved: FSDP leaves buffers unsharded, mixed precision leaves them float32
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            if self.checkpointing and self.training:
                h = checkpoint(layer, h, self.rope_cos, self.rope_sin, use_reentrant=False)
            else:
                h = layer(h, self.rope_cos, self.rope_sin)
        return self.output(self.norm(h))


def build(shape: Shape, seq_len: int, *, checkpointing: bool = False) -> Transformer:
    """A freshly initialised transformer of `shape` for sequences up to `seq_len` (on torch's default device)."""
    return Transformer(shape, seq_len, checkpointing=checkpointing)
