"""The Llama-shaped decoder the llm-step runner trains (runner/llm_step.py), in plain torch: its preset shapes (PRESETS),
its parameter count (param_count) and the nn.Module (build; torch passed in, never imported here).

The model: token embedding; per layer x += Attn(RMSNorm(x)), x += MLP(RMSNorm(x)) with Attn = q/k/v projections (no
bias), rotary embeddings (optional), causal SDPA with GQA (enable_gqa), output projection; MLP = SwiGLU,
down(silu(gate(x)) * up(x)); final RMSNorm; LM head (tied to the embedding or not); cross-entropy on the labels given.
Which layers run under torch.utils.checkpoint is the module's `checkpoint` (runner/llm_ac.py). Split out of
runner/llm_step.py in session 55 (house55); the runner's command line and document are unchanged."""

from __future__ import annotations

from simcluster.runner import llm_ac

# Llama-like shapes (layers, hidden, ffn, heads, kv_heads, vocab, tied). 1b and 3b are Llama 3.2 1B / 3B.
PRESETS = {
    "0.3b": dict(layers=24, hidden=1024, ffn=2816, heads=16, kv_heads=8, vocab=32000, tied=True),
    "0.5b": dict(layers=16, hidden=1536, ffn=4096, heads=12, kv_heads=4, vocab=32000, tied=False),
    "1b": dict(layers=16, hidden=2048, ffn=8192, heads=32, kv_heads=8, vocab=128256, tied=True),
    "3b": dict(layers=28, hidden=3072, ffn=8192, heads=24, kv_heads=8, vocab=128256, tied=True),
    "tiny": dict(layers=2, hidden=128, ffn=352, heads=4, kv_heads=2, vocab=512, tied=False),
    # session 21's sealed 2-GPU set: shapes no earlier run used (GQA 7:1 with a 50K vocabulary; 5:1 with a tied 64K one)
    "0.8b": dict(layers=20, hidden=1792, ffn=4864, heads=14, kv_heads=2, vocab=50304, tied=False),
    "2b": dict(layers=24, hidden=2560, ffn=6912, heads=20, kv_heads=4, vocab=65536, tied=True),
    # session 22's sealed set: TinyLlama 1.1B's shape (GQA 8:1, 32K vocabulary) and a Qwen2.5-3B-like one (36 thin layers,
    # GQA 8:1, tied 152K vocabulary)
    "1.1b": dict(layers=22, hidden=2048, ffn=5632, heads=32, kv_heads=4, vocab=32000, tied=False),
    "3.1b": dict(layers=36, hidden=2048, ffn=11008, heads=16, kv_heads=2, vocab=151936, tied=True),
    # session 24's 4-GPU set: Llama 3 8B's shape (GQA 4:1, 128K vocabulary, untied)
    "8b": dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256, tied=False),
}
def param_count(layers: int, hidden: int, ffn: int, heads: int, kv_heads: int, vocab: int, tied: bool) -> int:
    """Parameters of the decoder as built here (no biases; two RMSNorm weights per layer and a final one)."""
    d = hidden // heads
    attn = hidden * hidden * 2 + 2 * hidden * kv_heads * d
    return layers * (attn + 3 * hidden * ffn + 2 * hidden) + hidden + vocab * hidden * (1 if tied else 2)


def build(torch, cfg: dict, rope: bool):
    """The decoder as an nn.Module (no torch at import time: classes are made here)."""
    nn, F = torch.nn, torch.nn.functional
    hidden, heads, kv_heads = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    head_dim = hidden // heads

    class RMSNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            if hasattr(F, "rms_norm"):
                return F.rms_norm(x, (x.shape[-1],), self.weight.to(x.dtype), 1e-5)
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    def rotate(x, cos, sin):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(hidden, heads * head_dim, bias=False)
            self.k = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            # local head counts from the (possibly tensor-parallel) projections' outputs
            q = self.q(x).view(b, s, -1, head_dim).transpose(1, 2)
            k = self.k(x).view(b, s, -1, head_dim).transpose(1, 2)
            v = self.v(x).view(b, s, -1, head_dim).transpose(1, 2)
            if cos is not None:
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            gqa = {"enable_gqa": True} if q.shape[1] != k.shape[1] else {}
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
            return self.o(o.transpose(1, 2).reshape(b, s, -1))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(hidden, cfg["ffn"], bias=False)
            self.up = nn.Linear(hidden, cfg["ffn"], bias=False)
            self.down = nn.Linear(cfg["ffn"], hidden, bias=False)

        def forward(self, x):
            return self.down(F.silu(self.gate(x)) * self.up(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm, self.attn, self.mlp_norm, self.mlp = RMSNorm(hidden), Attention(), RMSNorm(hidden), Mlp()

        def forward(self, x, cos, sin):
            x = x + self.attn(self.attn_norm(x), cos, sin)
            return x + self.mlp(self.mlp_norm(x))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(cfg["vocab"], hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg["layers"]))
            self.norm = RMSNorm(hidden)
            self.head = nn.Linear(hidden, cfg["vocab"], bias=False)
            if cfg["tied"]:
                self.head.weight = self.embed.weight
            self.checkpoint = "none"    # --ac-mode (llm_ac.py): which layers run under torch.utils.checkpoint, and how

        def rotary(self, seq: int, device, dtype):
            if not rope:
                return None, None
            inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
            ang = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
            ang = torch.cat((ang, ang), dim=-1)
            return ang.cos().to(dtype)[None, None], ang.sin().to(dtype)[None, None]

        def run_layers(self, layers, x, cos, sin):
            for i, layer in enumerate(layers):
                x = llm_ac.run_block(torch, layer, i, self.checkpoint, x, cos, sin)
            return x

        def forward(self, tokens, labels, rope=None):   # rope: (cos, sin) given (the cp mode's sharded tables)
            x = self.embed(tokens)
            cos, sin = rope or self.rotary(tokens.shape[1], tokens.device, x.dtype)
            x = self.run_layers(self.layers, x, cos, sin)
            logits = self.head(self.norm(x))
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))

    return Decoder()
