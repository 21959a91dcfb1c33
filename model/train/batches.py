"""Training batches built on the device, with static shapes and no host
sync: the token streams are uploaded once, and every sequence of a step is
cut, holed, masked and gathered there by tensor operations from a
torch.Generator of that device.

Four kinds of sequence, each of length T, in fixed counts per step (so
every step has the same shapes: torch.compile compiles once, and nothing
waits for the host):

  * plain:  [BOS] a window of the stream; every token but BOS masked at one
    rate t ~ U(t_min, 1) (the masked-diffusion objective as before).
  * infill: multi-hole infill. [BOS] then a window that starts at a line,
    with 4-16 holes, each a whole line, 1-3 lines or the rest of a line.
    A hole's text is followed by EOS up to its canvas (16, 32 or 64
    tokens, or its length plus 0-8: the canvases sculpt asks for), exactly
    as sculpt lays out a canvas ([BOS] prefix [MASK]*m suffix [EOS], the
    middle padded by EOS), and each hole is masked at its own rate. Only
    canvas positions are masked. The last position is EOS.
  * repo:   the same on a record of the "repo" split (corpus.py): the
    repository snippets of a file in the LSP's prompt format, then a window
    of that file; holes only in the window, so the snippets are context to
    copy from, as in sculpt's prompts.
  * causal: [BOS] a window, unmasked, run with causal attention: next-token
    prediction on the same weights (rows_loss on every position).

The loss rows: static_rows() picks K target positions per bidirectional
sequence (model.py), causal_rows() all T-1 of a causal one.
"""
import numpy as np
import torch

import model as M

MAX_HOLES = 16
MIN_HOLES = 4
MAX_LINES = 256  # line starts looked at per window (a 1,024-token window has ~100)


class Streams:
    """A token stream on the device, with its line starts (the token after
    one that ends with a newline, or after EOS). Records: optional
    (start, length, prompt length) in tokens, one per record of the stream
    (files joined by EOS), for the repo split."""

    def __init__(self, stream, newline_ids, device, min_len, records=None):
        s = np.asarray(stream).astype(np.int64)
        if len(s) < min_len:  # a tiny split: repeat it
            s = np.tile(s, min_len // max(1, len(s)) + 1)
        self.s = torch.from_numpy(s).to(device)
        nl = torch.from_numpy(np.asarray(newline_ids, dtype=bool)).to(device)
        ls = torch.nonzero(nl[self.s]).squeeze(1) + 1
        self.ls = ls[ls < len(s)]
        self.n = len(s)
        self.rec = None
        if records is not None:
            st, ln, pt = (torch.as_tensor(np.asarray(a), dtype=torch.long, device=device)
                          for a in records)
            self.rec = (st, ln, pt)


def newline_table(tok):
    """bool [V]: the ids whose bytes end with a newline, and EOS."""
    nl = np.zeros(tok.n_vocab, dtype=bool)
    for i in range(tok.n_vocab):
        nl[i] = tok.token_bytes(i).endswith(b"\n")
    nl[tok.id_of("<|endoftext|>")] = True
    return nl


def record_bounds(stream, eos, prompt_bytes, token_len):
    """(start, length, prompt tokens) of each record of a stream of records
    each followed by EOS, the prompt part being its first prompt_bytes[i]
    bytes (token_len: bytes of each id). A record whose prompt does not end
    on a token boundary (never, for sculpt's and bpe.py's pre-tokenizer when
    the window starts at a non-blank line: corpus.py's rule) is dropped."""
    s = np.asarray(stream).astype(np.int64)
    ends = np.nonzero(s == eos)[0]
    starts = np.concatenate([[0], ends[:-1] + 1])
    n = min(len(starts), len(prompt_bytes))
    out_s, out_l, out_p = [], [], []
    for i in range(n):
        a, b = int(starts[i]), int(ends[i])
        cum = np.cumsum(token_len[s[a:b]])
        k = int(np.searchsorted(cum, prompt_bytes[i]))
        if k < len(cum) and cum[k] == prompt_bytes[i]:
            out_s.append(a)
            out_l.append(b - a)
            out_p.append(k + 1)
        elif prompt_bytes[i] == 0:
            out_s.append(a)
            out_l.append(b - a)
            out_p.append(0)
    return np.array(out_s), np.array(out_l), np.array(out_p)


class DeviceBatches:
    """mix: {"plain": n, "infill": n, "repo": n, "causal": n} sequences a step."""

    def __init__(self, train, tok, T, device, seed, mix, K, repo=None, t_min=0.02,
                 max_canvas=64):
        self.T, self.dev, self.K = T, torch.device(device), K
        self.g = torch.Generator(device=self.dev)
        self.g.manual_seed(seed)
        self.bos = tok.id_of("<|beginoftext|>")
        self.eos = tok.id_of("<|endoftext|>")
        self.mask = tok.id_of("<|mask|>")
        self.t_min, self.maxc = t_min, max_canvas
        self.train = train
        self.repo = repo if repo is not None and repo.rec is not None and len(repo.rec[0]) else None
        mix = dict(mix)
        if self.repo is None and mix.get("repo"):
            mix["infill"] = mix.get("infill", 0) + mix.pop("repo")
        self.mix = {k: int(mix.get(k, 0)) for k in ("plain", "infill", "repo", "causal")}
        self.B = sum(self.mix.values())
        self.arT = torch.arange(T, device=self.dev)

    # -- random numbers, all from the device's generator ------------------------------
    def _rand(self, *shape):
        return torch.rand(*shape, device=self.dev, generator=self.g)

    def _randint(self, lo, hi, shape):
        return torch.randint(lo, hi, shape, device=self.dev, generator=self.g)

    # -- the kinds ---------------------------------------------------------------------------
    def _windows(self, n):
        """[n, T]: BOS then T-1 tokens of the training stream."""
        S = self.train
        o = self._randint(0, S.n - self.T, (n,))
        x = S.s[o[:, None] + self.arT[None, :self.T - 1]]
        return torch.cat([torch.full((n, 1), self.bos, device=self.dev, dtype=x.dtype), x], 1)

    def _plain(self, n):
        x = self._windows(n)
        maskable = torch.ones_like(x, dtype=torch.bool)
        maskable[:, 0] = False
        t = self.t_min + (1 - self.t_min) * self._rand(n, 1)
        return x, maskable, t.expand(n, self.T)

    def _holes(self, S, o, src_len, first_rel):
        """Multi-hole sequences from stream S: o [n] origins (line starts),
        src_len [n] source tokens usable from o, first_rel [n] the first
        source offset a hole may start at. Returns (x, maskable, t_tok)."""
        n, T, HM, L = o.shape[0], self.T, MAX_HOLES, MAX_LINES
        dev = self.dev
        j0 = torch.searchsorted(S.ls, o)
        jj = (j0[:, None] + torch.arange(L + 1, device=dev)[None]).clamp(max=len(S.ls) - 1)
        rel = S.ls[jj] - o[:, None]
        rel = torch.minimum(rel, src_len[:, None])
        f = torch.searchsorted(rel, first_rel[:, None].contiguous())  # [n, 1]
        nh = self._randint(MIN_HOLES, MAX_HOLES + 1, (n, 1))
        # The source text the output has room for once the canvases' EOS
        # padding (~24 tokens a hole) is in: the holes are spread over it.
        room = torch.minimum(src_len[:, None], (0.9 * T - 24 * nh).clamp(min=T // 4).long())
        usable = ((rel[:, :L] < room) & (rel[:, :L] >= first_rel[:, None])).sum(1, keepdim=True)
        spacing = (usable.float() / nh.float()).clamp(min=2.0)
        rest = self._rand(n, HM) < 0.4  # the rest of a line, else 1-3 whole lines
        multi = torch.where(self._rand(n, HM) < 0.5, torch.ones_like(nh).expand(n, HM),
                            self._randint(2, 4, (n, HM)))
        nlines = torch.where(rest, torch.ones_like(multi), multi)
        gaps = 1 + (self._rand(n, HM) * (2 * spacing - 2)).long()  # >= 1 line between holes
        gaps[:, :1] = (self._rand(n, 1) * spacing).long()
        prev = torch.cat([torch.zeros_like(nlines[:, :1]), nlines[:, :-1]], 1)
        a = f + torch.cumsum(gaps + prev, 1)
        hole = torch.arange(HM, device=dev)[None] < nh
        en = hole & (a + nlines <= L)
        start = rel.gather(1, a.clamp(max=L))
        end1 = rel.gather(1, (a + 1).clamp(max=L))
        end = rel.gather(1, (a + nlines).clamp(max=L))
        # Lines too long for a 64-token canvas together: the first alone.
        end = torch.where(end - start > self.maxc, end1, end)
        lnlen = end - start
        off = (self._rand(n, HM) * lnlen.float()).long().clamp(min=0)
        start = torch.where(rest, start + torch.minimum(off, (lnlen - 1).clamp(min=0)), start)
        s = end - start
        en = en & (s > 0) & (s <= self.maxc) & (end <= src_len[:, None])
        single = nlines == 1
        r = self._rand(n, HM)
        m_single = torch.where(r < 0.5, torch.full_like(s, 32),
                               torch.where(r < 0.75, torch.full_like(s, 16), s))
        m_multi = torch.where(r < 0.5, torch.full_like(s, 64),
                              torch.where(r < 0.75, torch.full_like(s, 32), s))
        m = torch.where(single, m_single, m_multi)
        m = torch.where(m == s, s + self._randint(0, 9, (n, HM)), m)
        m = torch.maximum(m, s).clamp(max=self.maxc)
        en = en & (m >= s)
        pad = torch.where(en, m - s, torch.zeros_like(m))
        cum = torch.cumsum(pad, 1)
        out_end = 1 + end + cum  # one past a hole's canvas in the output
        en = en & (out_end <= T - 1)  # a suffix of the holes: out_end only grows
        pad = torch.where(en, m - s, torch.zeros_like(m))
        cum = torch.cumsum(pad, 1)
        hs = 1 + start + cum - pad  # each canvas' first output position
        mm = torch.where(en, m, torch.zeros_like(m))
        # Source token i goes to 1 + i + the pads of the holes ending at or before it.
        i = self.arT[None].expand(n, T).contiguous()
        c = torch.searchsorted(end.contiguous(), i, right=True)
        cum0 = torch.cat([torch.zeros_like(cum[:, :1]), cum], 1)
        dest = 1 + i + cum0.gather(1, c)
        ok = (dest < T - 1) & (i < src_len[:, None])
        dest = torch.where(ok, dest, torch.full_like(dest, T))
        src = S.s[(o[:, None] + i).clamp(max=S.n - 1)]
        buf = torch.full((n, T + 1), self.eos, device=dev, dtype=src.dtype)
        buf.scatter_(1, dest, src)
        x = buf[:, :T].clone()
        x[:, 0] = self.bos
        x[:, T - 1] = self.eos
        # Canvas membership: the last canvas starting at or before p.
        p = i
        k = torch.searchsorted(hs.contiguous(), p, right=True) - 1
        kc = k.clamp(min=0)
        maskable = (k >= 0) & (p < hs.gather(1, kc) + mm.gather(1, kc))
        t_h = self.t_min + (1 - self.t_min) * self._rand(n, HM)
        return x, maskable, t_h.gather(1, kc)

    def _infill(self, n):
        S = self.train
        j = self._randint(0, max(1, len(S.ls) - MAX_LINES - 2), (n,))
        o = S.ls[j]
        src_len = (S.n - o).clamp(max=self.T)
        return self._holes(S, o, src_len, torch.zeros_like(o))

    def _repo(self, n):
        R = self.repo
        st, ln, pt = R.rec
        r = self._randint(0, len(st), (n,))
        return self._holes(R, st[r], ln[r].clamp(max=self.T - 2), pt[r])

    # -- a step ------------------------------------------------------------------------------
    def batch(self, n_batch=None):
        """One step's sequences: dict with the bidirectional part (inp, tgt,
        idx, w, masked, maskable) and the causal one (cx, cidx, cw), each
        None when the mix has none. n_batch: the loss's batch size (the
        step's sequence count by default)."""
        nb = n_batch or self.B
        xs, ms, ts = [], [], []
        for kind, fn in (("plain", self._plain), ("infill", self._infill), ("repo", self._repo)):
            if self.mix[kind]:
                x, mk, t = fn(self.mix[kind])
                xs.append(x), ms.append(mk), ts.append(t)
        out = dict(inp=None, tgt=None, idx=None, w=None, cx=None, cidx=None, cw=None)
        if xs:
            x, maskable, t_tok = torch.cat(xs), torch.cat(ms), torch.cat(ts)
            masked = maskable & (self._rand(*x.shape) < t_tok)
            idx, w = M.static_rows(masked, t_tok, maskable, self.K, nb, gen=self.g)
            out.update(inp=torch.where(masked, torch.full_like(x, self.mask), x), tgt=x,
                       idx=idx, w=w, masked=masked, maskable=maskable, t_tok=t_tok)
        if self.mix["causal"]:
            cx = self._windows(self.mix["causal"])
            cidx, cw = M.causal_rows(cx.shape[0], self.T, nb, self.dev)
            out.update(cx=cx, cidx=cidx, cw=cw)
        return out


def step_loss(model, b):
    """(loss, sum of masked CE, masked rows, sum of causal CE, causal rows)
    of one batch: device tensors."""
    z = torch.zeros((), device=(b["inp"] if b["inp"] is not None else b["cx"]).device)
    loss, ce, n, cce, cn = z, z, z, z, z
    if b["inp"] is not None:
        h = model.hidden(b["inp"])
        loss, ce, n = M.rows_loss(model, h, b["tgt"], b["idx"], b["w"])
    if b["cx"] is not None:
        h = model.hidden(b["cx"], causal=True)
        l2, cce, cn = M.rows_loss(model, h, b["cx"], b["cidx"], b["cw"])
        loss = loss + l2
    return loss, ce, n, cce, cn
