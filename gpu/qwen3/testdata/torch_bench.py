"""Times a plain torch forward of a dense Qwen3 model folder on bench_test.go's workloads.

The model is torch_forward.py's (the same independent forward, batched here, float32). Usage:
torch_bench.py JOB, a JSON object {"folder", "threads", "prompts" (the prefill's prompts, equal
lengths), "prompt", "actions" (one decision: its prompt and legal actions' token ids), "out"}.
It writes to out a JSON object of:

  prefill_tokens_s  prompt tokens per second of one batched forward of the prompts to the
                    final-norm hidden states (the keys and values computed, no logits), as the
                    Go prefill;
  plain_decisions_s decisions per second of the plain scoring: one batched forward of prompt +
                    each action (right-padded), full-vocabulary logits at the actions' positions,
                    then the trie-masked log-probabilities;
  kv_decisions_s    the same with a KV cache: one forward of the prompt, then one batched forward
                    of the actions over the prompt's keys and values;
  plain_logprobs, kv_logprobs: the actions' trie-masked log-probabilities (for a sanity check);
  torch, threads, blas: torch's version, its threads and the BLAS library it loaded (Debian's
                    reference BLAS is ~30x slower than OpenBLAS here: see bench_test.go).

Each time is one timed run after an untimed warm-up (a short decision). Exit status 77 where torch
does not import.
"""
import json
import os
import sys
import time

try:
    import torch
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_forward import read_safetensors, rms_norm, rotate_half  # noqa: E402


class Model:
    def __init__(self, folder):
        self.cfg = cfg = json.load(open(os.path.join(folder, "config.json")))
        self.w = {k: v.to(torch.float32) for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
        self.eps, self.hd = cfg["rms_norm_eps"], cfg["head_dim"]
        self.nh, self.nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.head = self.w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else self.w["lm_head.weight"]
        self.inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.hd, 2, dtype=torch.float64) / self.hd))

    def forward(self, ids, start=0, past=None):
        """Final-norm hidden states [B, T, hidden] of ids [B, T] at positions start…, attending
        (causally) to past (per layer the keys and values [B, nkv, start, hd]) and themselves; and
        the layers' keys and values including past."""
        w, eps, hd, nh, nkv = self.w, self.eps, self.hd, self.nh, self.nkv
        B, T = ids.shape
        x = w["model.embed_tokens.weight"][ids]
        ang = torch.outer(torch.arange(start, start + T, dtype=torch.float64), self.inv_freq)
        ang = torch.cat((ang, ang), dim=-1)
        cos, sin = ang.cos().to(torch.float32), ang.sin().to(torch.float32)
        mask = torch.full((T, start + T), float("-inf")).triu(start + 1)
        kvs = []
        for i in range(self.cfg["num_hidden_layers"]):
            p = "model.layers.%d." % i
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(B, T, nh, hd).transpose(1, 2)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(B, T, nkv, hd).transpose(1, 2)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, T, nkv, hd).transpose(1, 2)
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if past is not None:
                k = torch.cat((past[i][0], k), dim=2)
                v = torch.cat((past[i][1], v), dim=2)
            kvs.append((k, v))
            k = k.repeat_interleave(nh // nkv, dim=1)
            v = v.repeat_interleave(nh // nkv, dim=1)
            att = torch.softmax(q @ k.transpose(2, 3) * hd ** -0.5 + mask, dim=-1)
            o = (att @ v).transpose(1, 2).reshape(B, T, nh * hd)
            x = x + o @ w[p + "self_attn.o_proj.weight"].T
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            g = h @ w[p + "mlp.gate_proj.weight"].T
            u = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
        return rms_norm(x, w["model.norm.weight"], eps), kvs


def allowed_sets(actions):
    """Per action per position: the sorted tokens allowed after its prefix (the trie's)."""
    out = []
    for a in actions:
        rows = []
        for j in range(len(a)):
            rows.append(sorted({b[j] for b in actions if len(b) > j and b[:j] == a[:j]}))
        out.append(rows)
    return out


def masked_logprobs(logits, actions, allowed):
    """logits[i][j]: the vocabulary logits predicting action i's token j."""
    out = []
    for i, a in enumerate(actions):
        lp = 0.0
        for j, tok in enumerate(a):
            al = allowed[i][j]
            if len(al) < 2:
                continue
            z = logits[i][j][al]
            lp += float(z[al.index(tok)] - torch.logsumexp(z, 0))
        out.append(lp)
    return out


def score_plain(m, prompt, actions, allowed):
    P, L = len(prompt), max(len(a) for a in actions)
    ids = torch.zeros((len(actions), P + L), dtype=torch.long)
    for i, a in enumerate(actions):
        ids[i, :P] = torch.tensor(prompt)
        ids[i, P : P + len(a)] = torch.tensor(a)
    h, _ = m.forward(ids)
    logits = [h[i, P - 1 : P - 1 + len(a)] @ m.head.T for i, a in enumerate(actions)]
    return masked_logprobs(logits, actions, allowed)


def score_kv(m, prompt, actions, allowed):
    P, L, A = len(prompt), max(len(a) for a in actions), len(actions)
    h, kvs = m.forward(torch.tensor([prompt]))
    last = h[0, P - 1] @ m.head.T
    past = [(k.expand(A, -1, -1, -1), v.expand(A, -1, -1, -1)) for k, v in kvs]
    ids = torch.zeros((A, L), dtype=torch.long)
    for i, a in enumerate(actions):
        ids[i, : len(a)] = torch.tensor(a)
    h, _ = m.forward(ids, P, past)
    logits = [torch.cat((last[None], h[i, : len(a) - 1] @ m.head.T)) for i, a in enumerate(actions)]
    return masked_logprobs(logits, actions, allowed)


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


def blas():
    """The BLAS library torch's matrix products went to: Debian's torch links libblas.so.3, netlib's
    reference BLAS unless an optimised one (OpenBLAS) is the alternative or on LD_LIBRARY_PATH."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path) or "mkl" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return " ".join(sorted(libs)) or "built in"


def main():
    job = json.load(open(sys.argv[1]))
    torch.set_num_threads(job["threads"])
    m = Model(job["folder"])
    prompts = torch.tensor(job["prompts"], dtype=torch.long)
    prompt, actions = job["prompt"], job["actions"]
    allowed = allowed_sets(actions)
    out = {}
    with torch.no_grad():
        score_kv(m, prompt[:16], actions, allowed)  # warm-up, untimed
        t, _ = timed(lambda: m.forward(prompts))
        out["prefill_tokens_s"] = prompts.numel() / t
        t, out["plain_logprobs"] = timed(lambda: score_plain(m, prompt, actions, allowed))
        out["plain_decisions_s"] = 1 / t
        t, out["kv_logprobs"] = timed(lambda: score_kv(m, prompt, actions, allowed))
        out["kv_decisions_s"] = 1 / t
    out["torch"] = torch.__version__
    out["blas"] = blas()
    out["threads"] = torch.get_num_threads()
    with open(job["out"], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
