"""The inference pool's event loop compiled with numba (the ``fast`` extra).

:meth:`twin.workload.inference.InferencePool.advance` has two implementations of one time step
of the serving schedule: the numpy reference, vectorised over replicas with an array operation per
quantity and event, and :func:`advance`, here, which runs the same events with the same equations
in the same order as loops over replicas, compiled. Replicas are independent between admissions,
so each event's arithmetic on one replica is the reference's on that replica's element; sums per
replica are accumulated in the order numpy's ``bincount`` and ``cumsum`` accumulate them, and
sorts are stable like ``lexsort``. Same requests, same seed: the same tokens, times and
utilisations, bit for bit (tests/workload/test_serving_kernel.py).

This module imports numba when it is imported; :mod:`twin.workload.inference` imports it only when
a pool uses the compiled kernel.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from twin.workload.pool_slots import DECODE, DONE_TOKENS, EMPTY, K_REBASE, PREFILL

jit = numba.njit(cache=True, nogil=True)


@jit
def _min(a, b):
    """``np.minimum`` of two floats (a NaN wins)."""
    if math.isnan(a) or math.isnan(b):
        return a if math.isnan(a) else b
    return a if a <= b else b


@jit
def _max(a, b):
    """``np.maximum`` of two floats (a NaN wins)."""
    if math.isnan(a) or math.isnan(b):
        return a if math.isnan(a) else b
    return a if a >= b else b


@jit
def _decode_time(k, b, w, kv, ctx, rr):
    """:func:`twin.workload.inference.decode_time` with MBU 1 (same operation order)."""
    return (k * w + kv * b * (k * ctx + 0.5 * k * (k - 1.0))) / (rr * 1.0)


@jit
def _decode_steps(duration, b, w, kv, ctx, rr):
    """:func:`twin.workload.inference.decode_steps` with MBU 1 (same operation order)."""
    rt = duration * rr * 1.0
    a = 0.5 * kv * b
    beta = w + kv * b * (ctx - 0.5)
    return 2.0 * rt / (beta + math.sqrt(beta * beta + 4.0 * a * rt))


@jit
def _room(r, head, n, B, kv, kv_cap, kv_limited, n_occ, kv_used, prompt, output):
    """Replica ``r`` has a free slot and KV cache for the request at the queue head."""
    if n_occ[r] >= B:
        return False
    if kv_limited and head < n:
        return kv_used[r] + (prompt[head] + output[head]) * kv <= kv_cap
    return True


@jit
def _finish(r, tr, B, kv, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum, kend_min, kv_used,
            prompt, output, done_t, ctr):
    """Free the slots of replica ``r``'s finished sequences (``InferencePool._finish``)."""
    Kr = K[r]
    cnt = 0
    s_kv = 0.0
    s_ctx = 0.0
    for s in range(B):
        if phase[r, s] == DECODE and kend[r, s] - Kr <= DONE_TOKENS:
            j = req[r, s]
            done_t[j] = tr
            s_kv += (prompt[j] + output[j]) * kv
            s_ctx += ctx0[r, s] + (Kr - k0[r, s])
            req[r, s] = -1
            phase[r, s] = EMPTY
            cnt += 1
    kv_used[r] -= s_kv
    ctr[1] += cnt
    n_occ[r] -= cnt
    n_dec[r] -= cnt
    ctx_sum[r] -= s_ctx
    km = np.inf
    for s in range(B):
        if phase[r, s] == DECODE and kend[r, s] < km:
            km = kend[r, s]
    kend_min[r] = km
    if n_dec[r] == 0:  # an empty decode batch restarts its step counter
        K[r] = 0.0
        ctx_sum[r] = 0.0
    if K[r] > K_REBASE:  # a batch that never empties: keep K small
        shift = K[r]
        for s in range(B):
            kend[r, s] -= shift
            k0[r, s] -= shift
        kend_min[r] -= shift
        K[r] = 0.0


@jit
def _first_tokens(r, tr, B, kv, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum, kend_min,
                  kv_used, pf_left, pf_batch, pf_tokens, pf_act, prefilling, prompt, output,
                  first_token, done_t, ctr):
    """Finish replica ``r``'s prefill batch (``InferencePool._first_tokens``); returns the tokens
    generated."""
    Kr = K[r]
    cnt = 0
    s_ctx = 0.0
    s_gen = 0.0
    single = False
    km = kend_min[r]
    for s in range(B):
        if phase[r, s] == PREFILL:
            j = req[r, s]
            first_token[j] = tr
            out = output[j]
            gen = _min(out, 1.0)  # none for a request with no output
            c0 = prompt[j] + gen
            ke = Kr + (out - gen)
            k0[r, s] = Kr
            ctx0[r, s] = c0
            kend[r, s] = ke
            phase[r, s] = DECODE
            cnt += 1
            s_ctx += c0
            s_gen += gen
            km = _min(km, ke)
            if out == gen:
                single = True
    prefilling[r] = False
    pf_left[r] = 0.0
    pf_batch[r] = 0.0
    pf_tokens[r] = 0.0
    pf_act[r] = 0.0
    n_dec[r] += cnt
    ctx_sum[r] += s_ctx
    kend_min[r] = km
    if single:  # a single output token: finished already
        _finish(r, tr, B, kv, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum, kend_min, kv_used,
                prompt, output, done_t, ctr)
    return s_gen


@jit
def _stable_order(primary, secondary):
    """Indices sorting by ``primary`` then ``secondary``, ties in index order (``np.lexsort``;
    an insertion sort: a few dozen replicas at most compete at one event)."""
    n = primary.size
    o = np.arange(n)
    for q in range(1, n):
        x = o[q]
        p = q - 1
        while p >= 0 and (primary[o[p]] > primary[x]
                          or (primary[o[p]] == primary[x] and secondary[o[p]] > secondary[x])):
            o[p + 1] = o[p]
            p -= 1
        o[p + 1] = x
    return o


@jit
def _admit(A, nA, tau, c, n_arrived, n, B, kv, chunk, has_chunk, kv_cap, kv_limited, max_pf_tokens,
           params, layers, d_model, u_tensor, u_hbm, W, t_pass, Rr, tau_flop, tau_sq, tau_coll,
           flops_peak, hbm_bw, req, phase, n_occ, kv_used, pf_left, pf_batch, pf_tokens, pf_act,
           prefilling, arrival, prompt, output, admitted, replica, ctr, ai, af, ab):
    """Move queued requests into free slots of ready replicas (``InferencePool._admit``);
    ``ai``, ``af``, ``ab``: work arrays (:func:`work_arrays`)."""
    head = ctr[0]
    el = ai[0, :nA]
    ne = 0
    t_min = np.inf
    for a in range(nA):
        r = A[a]
        running = c[r] > 0
        if running:
            t_min = min(t_min, tau[r])
            if (not prefilling[r]) and _room(r, head, n, B, kv, kv_cap, kv_limited, n_occ, kv_used,
                                             prompt, output):
                el[ne] = r
                ne += 1
    if ne == 0:
        return
    el = el[:ne]
    t_el = af[0, :ne]
    occ = ai[1, :ne]
    for e in range(ne):
        t_el[e] = tau[el[e]]
        occ[e] = n_occ[el[e]]
    t_hi = t_el.max()
    hi = min(n_arrived, np.searchsorted(arrival[:n_arrived], t_hi, side="right"))
    m = hi - head
    if m <= 0:
        return
    if ne > 1:
        order = _stable_order(t_el, occ)
        el, t_el, occ = el[order], t_el[order], occ[order]
    free_max = 0
    for e in range(ne):
        free_max = max(free_max, B - occ[e])
    rounds = min(free_max, m)
    # Slots in time order: per instant, round by round (each replica's first, then second...).
    ns_max = 0
    for e in range(ne):
        ns_max += min(B - occ[e], rounds)
    sk = ai[2, :ns_max]
    si = ai[3, :ns_max]
    ns = 0
    g0 = 0
    while g0 < ne:
        g1 = g0 + 1
        while g1 < ne and t_el[g1] == t_el[g0]:
            g1 += 1
        for k in range(rounds):
            for i in range(g0, g1):
                if k < B - occ[i]:
                    sk[ns] = k
                    si[ns] = i
                    ns += 1
        g0 = g1
    t_slot = af[1, :ns]
    for q in range(ns):
        t_slot[q] = t_el[si[q]]
    # Request n takes the first slot after request n − 1's whose time is ≥ its arrival (q_n):
    # p_n = n + max over n' ≤ n of (q_n' − n').
    p = ai[4, :min(m, ns)]  # (p_n ≥ n: the requests that find a slot are fewer than the slots)
    take = 0
    run = 0
    for nn in range(m):
        q = np.searchsorted(t_slot, arrival[head + nn], side="left") - nn
        run = q if nn == 0 else max(run, q)
        pn = nn + run
        if pn >= ns:
            break
        p[nn] = pn
        take += 1
    if take == 0:
        return
    k_t = ai[5, :take]
    i_t = ai[6, :take]
    fits = ab[:take]
    kmax = 0
    for q in range(take):
        k_t[q] = sk[p[q]]
        i_t[q] = si[p[q]]
        t_i = t_slot[p[q]]
        a_j = arrival[head + q]
        fits[q] = (t_i == a_j) or (t_i == t_min)
        kmax = max(kmax, k_t[q])
    if kmax > 0 or kv_limited:
        # Running sums per replica in admission order, as the reference forms them: a cumulative
        # sum over the requests sorted by replica less its value before each replica's first.
        s_ord = ai[7, :take]  # by replica, in admission order (a stable
        first = ai[8, :ne + 1]  # counting sort of i_t, which is < ne)
        first[:] = 0
        for q in range(take):
            first[i_t[q] + 1] += 1
        for e in range(ne):
            first[e + 1] += first[e]
        for q in range(take):
            s_ord[first[i_t[q]]] = q
            first[i_t[q]] += 1
        for which in range(2):
            if which == 0 and kmax == 0:
                continue
            if which == 1 and not kv_limited:
                continue
            csum = 0.0
            base = 0.0
            for pos in range(take):
                q = s_ord[pos]
                j = head + q
                v = prompt[j] if which == 0 else (prompt[j] + output[j]) * kv
                csum += v
                if pos == 0 or i_t[q] != i_t[s_ord[pos - 1]]:
                    base = csum - v
                rs = csum - base
                if which == 0:
                    fits[q] = fits[q] and ((k_t[q] == 0) or (rs <= max_pf_tokens))
                else:
                    fits[q] = fits[q] and (kv_used[el[i_t[q]]] + rs <= kv_cap)
    cut = take
    for q in range(take):
        if not fits[q]:
            cut = q
            break
    if cut == 0:
        return
    # The k-th empty slot of each chosen replica (before any is filled).
    slot = ai[9, :cut]
    for q in range(cut):
        r = el[i_t[q]]
        want = k_t[q]
        seen = -1
        slot[q] = 0
        for s in range(B):
            if req[r, s] < 0:
                seen += 1
                if seen == want:
                    slot[q] = s
                    break
    R = n_occ.size
    cnt = ai[10, :R]
    s_kv = af[2, :R]
    tokens = af[3, :R]
    square = af[4, :R]
    cnt[:] = 0
    s_kv[:] = 0.0
    tokens[:] = 0.0
    square[:] = 0.0
    for q in range(cut):
        r = el[i_t[q]]
        j = head + q
        req[r, slot[q]] = j
        phase[r, slot[q]] = PREFILL
        pr = prompt[j]
        cnt[r] += 1
        s_kv[r] += (prompt[j] + output[j]) * kv
        tokens[r] += pr
        square[r] += pr * pr
    for r in range(R):
        if cnt[r] == 0:
            continue
        n_occ[r] += cnt[r]
        kv_used[r] += s_kv[r]
        n_tok = tokens[r]
        n_sq = square[r]
        passes = 1.0 if not has_chunk else _max(1.0, math.ceil(n_tok / chunk))
        compute = _max(n_tok * tau_flop[r] + n_sq * tau_sq[r], passes * W / Rr[r])
        work = compute + n_tok * tau_coll[r] + passes * t_pass
        flops = 2.0 * params * n_tok + 2.0 * layers * d_model * n_sq
        pf_left[r] = work
        pf_batch[r] = work
        pf_tokens[r] = n_tok
        pf_act[r] = u_tensor * flops / flops_peak[r] + u_hbm * passes * W / hbm_bw[r]
    for q in range(cut):
        r = el[i_t[q]]
        j = head + q
        prefilling[r] = True
        admitted[j] = tau[r]
        replica[j] = r
    ctr[0] = head + cut


#: Rows of the per-replica work arrays of :func:`advance` (floats, integers, flags).
_WORK_F, _WORK_I, _WORK_B = 18, 3, 3


@jit
def work_arrays(R, B):
    """The work arrays :func:`advance` uses within a step (allocated once for the steps of
    :func:`advance_steps`; their values do not carry from one step to the next): per replica
    (floats, integers, flags), then :func:`_admit`'s, per slot of the pool and per replica
    (integers, floats, flags)."""
    m = R * B + R + 1
    return (np.empty((_WORK_F, R)), np.empty((_WORK_I, R), dtype=np.int64), np.zeros((_WORK_B, R), dtype=np.bool_),
            np.empty((11, m), dtype=np.int64), np.empty((5, m)), np.empty(m, dtype=np.bool_))


@jit
def advance(t0, t_end, n_arr_end, n, c, max_events, B, W, kv, chunk, t_pass, kv_cap, max_pf_tokens,
            params, layers, d_model, u_tensor, u_hbm, Rr, tau_tok, tau_flop, tau_sq, tau_coll,
            flops_peak, hbm_bw, a_byte, a_seq, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum,
            kend_min, pf_left, pf_batch, pf_tokens, pf_act, kv_used, prefilling, arrival, prompt,
            output, admitted, first_token, done_t, replica, ctr, act, act_dec, tok_p, tok_o):
    """Serve one time step [t0, t_end) as ``InferencePool.advance`` does (its reference loop).

    Fills ``act``, ``act_dec`` (∫u dt [s]), ``tok_p`` and ``tok_o`` [tokens] per replica and
    updates the pool's state arrays and request columns in place; ``ctr`` holds the queue head
    and the count of finished requests. Returns False when ``max_events`` events did not end the
    step (a scheduling bug).
    """
    wf, wi, wb, ai, af, ab = work_arrays(c.size, B)
    return _advance(t0, t_end, n_arr_end, n, c, max_events, B, W, kv, chunk, t_pass, kv_cap, max_pf_tokens,
                    params, layers, d_model, u_tensor, u_hbm, Rr, tau_tok, tau_flop, tau_sq, tau_coll,
                    flops_peak, hbm_bw, a_byte, a_seq, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum,
                    kend_min, pf_left, pf_batch, pf_tokens, pf_act, kv_used, prefilling, arrival, prompt,
                    output, admitted, first_token, done_t, replica, ctr, act, act_dec, tok_p, tok_o, wf, wi, wb,
                    ai, af, ab)


@jit
def _advance(t0, t_end, n_arr_end, n, c, max_events, B, W, kv, chunk, t_pass, kv_cap, max_pf_tokens,
            params, layers, d_model, u_tensor, u_hbm, Rr, tau_tok, tau_flop, tau_sq, tau_coll,
            flops_peak, hbm_bw, a_byte, a_seq, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum,
            kend_min, pf_left, pf_batch, pf_tokens, pf_act, kv_used, prefilling, arrival, prompt,
            output, admitted, first_token, done_t, replica, ctr, act, act_dec, tok_p, tok_o, wf, wi, wb, ai, af, ab):
    """:func:`advance` with its work arrays given (:func:`work_arrays`)."""
    R = c.size
    has_chunk = not math.isnan(chunk)  # NaN: no chunked prefill
    kv_limited = math.isfinite(kv_cap)
    tau = wf[0]
    tau[:] = t0
    inv_c = wf[1]
    inv_c0 = wf[2]
    for r in range(R):
        if c[r] > 0:
            inv_c[r] = 1.0 / c[r]
            inv_c0[r] = inv_c[r]
        else:
            inv_c[r] = np.inf
            inv_c0[r] = 0.0
    A = wi[0]
    for r in range(R):
        A[r] = r
    nA = R
    tA = wf[3]
    rem = wf[4]
    seg = wf[5]
    pfm = wb[0]
    decm = wb[1]
    md = wb[2]
    pfm[:] = False
    decm[:] = False
    md[:] = False
    share = wf[6]
    ctx = wf[7]
    bdec = wf[8]  # decode batch sizes at the start of the event [1]
    w_eff = wf[9]
    rr = wf[10]
    kstar = wf[11]
    T_dec = wf[12]
    pr = wf[13]
    pl = wf[14]
    T_pf = wf[15]
    new_tau = wf[16]
    idx = wi[1]
    key = wf[17]
    occ_i = wi[2]
    for _ in range(max_events):
        t_max = -np.inf
        for a in range(nA):
            tA[a] = tau[A[a]]
            t_max = max(t_max, tA[a])
        head = ctr[0]
        queued = head < n_arr_end  # a request arrives (or waits) within the step
        if queued and arrival[head] <= t_max:
            _admit(A, nA, tau, c, n_arr_end, n, B, kv, chunk, has_chunk, kv_cap, kv_limited,
                   max_pf_tokens, params, layers, d_model, u_tensor, u_hbm, W, t_pass, Rr, tau_flop,
                   tau_sq, tau_coll, flops_peak, hbm_bw, req, phase, n_occ, kv_used, pf_left,
                   pf_batch, pf_tokens, pf_act, prefilling, arrival, prompt, output, admitted,
                   replica, ctr, ai, af, ab)
            head = ctr[0]
            queued = head < n_arr_end
        pf_any = False
        dec_any = False
        for a in range(nA):
            r = A[a]
            rem[a] = t_end - tA[a]
            seg[a] = rem[a]
            pfm[a] = prefilling[r]
            # Decoding replicas: not prefilling, or prefilling in chunks (then sharing time).
            decm[a] = n_dec[r] > 0 and (has_chunk or not pfm[a])
            share[a] = 1.0
            pf_any = pf_any or pfm[a]
            dec_any = dec_any or decm[a]
        if dec_any:
            for a in range(nA):
                if not decm[a]:
                    continue
                r = A[a]
                bd = n_dec[r]
                bdec[a] = bd
                ctx[a] = ctx_sum[r] / bd
                # Fixed per-step time (overheads and matrix work) folded into the bytes: W_eff.
                w_eff[a] = W + Rr[r] * (t_pass + bd * tau_tok[r]) * inv_c[r]
                if has_chunk and pfm[a] and c[r] > 0:  # a stalled replica keeps share 1
                    t_d = (W + bd * ctx[a] * kv) / Rr[r] + (t_pass + bd * tau_tok[r]) * inv_c[r]
                    t_c = (chunk * tau_tok[r] + t_pass) * inv_c[r]
                    share[a] = t_c / (t_c + t_d)
                rr[a] = Rr[r] * (1.0 - (share[a] if pfm[a] else 0.0))
                kstar[a] = kend_min[r] - K[r]
                md[a] = c[r] > 0 and rr[a] > 0
                T_dec[a] = _decode_time(kstar[a], float(bd), w_eff[a], kv, ctx[a], rr[a]) if md[a] else np.inf
                seg[a] = _min(seg[a], T_dec[a])
        # Prefill: time to finish the current batch (its work in full-clock seconds).
        if pf_any:
            for a in range(nA):
                if not pfm[a]:
                    continue
                r = A[a]
                pr[a] = c[r] * share[a]
                pl[a] = pf_left[r]
                T_pf[a] = pl[a] / pr[a] if pr[a] > 0 else np.inf
                seg[a] = _min(seg[a], T_pf[a])
        for a in range(nA):
            new_tau[a] = tA[a] + seg[a]
        # Arrivals: replicas with room stop at an arrival; the best placed (earliest, then least
        # loaded) watches the queue head, the next one the request after it, and so on.
        if queued:
            cnt = 0
            for a in range(nA):
                r = A[a]
                if (not pfm[a]) and c[r] > 0 and _room(r, head, n, B, kv, kv_cap, kv_limited, n_occ,
                                                      kv_used, prompt, output):
                    idx[cnt] = a
                    cnt += 1
            if cnt:
                ix = idx[:cnt]
                if cnt > 1:
                    n_next = n_arr_end - head
                    ah = arrival[head]
                    for q in range(cnt):
                        key[q] = _max(tA[ix[q]], ah)
                        occ_i[q] = n_occ[A[ix[q]]]
                    ix = ix[_stable_order(key[:cnt], occ_i[:cnt])][:n_next]
                for q in range(ix.size):
                    a = ix[q]
                    an = arrival[head + q]
                    T_arr = _max(an - tA[a], 0.0)
                    if T_arr <= seg[a]:
                        seg[a] = T_arr
                        new_tau[a] = _max(tA[a] + T_arr, an)  # exactly then
        for a in range(nA):
            if seg[a] >= rem[a]:
                new_tau[a] = t_end
            tau[A[a]] = new_tau[a]
        # Progress, replica by replica: prefill (work, then tokens and activity in proportion),
        # then decode (k steps for every decoding sequence of the replica).
        nk = 0
        for a in range(nA):
            r = A[a]
            if pfm[a]:
                sp = seg[a]
                fin = sp >= T_pf[a]
                done = pl[a] if fin else _min(sp * pr[a], pl[a])
                pf_left[r] = pl[a] - done
                frac = done / pf_batch[r] if pf_batch[r] > 0 else 0.0
                tok_p[r] += frac * pf_tokens[r]
                act[r] += frac * pf_act[r] * inv_c0[r]
                if fin:
                    tok_o[r] += _first_tokens(r, tau[r], B, kv, req, phase, kend, k0, ctx0, K, n_occ, n_dec,
                                              ctx_sum, kend_min, kv_used, pf_left, pf_batch, pf_tokens,
                                              pf_act, prefilling, prompt, output, first_token, done_t, ctr)
            if decm[a]:
                bf = bdec[a]
                sd = seg[a]
                fin = sd >= T_dec[a]
                k = kstar[a]
                if not md[a]:
                    k = 0.0
                elif not fin:
                    k = _min(kstar[a], _decode_steps(sd, bf, w_eff[a], kv, ctx[a], rr[a]))
                # Bytes read and sequence-steps in the k steps, as activity.
                read = k * W + kv * bf * (k * ctx[a] + 0.5 * k * (k - 1.0))
                running = 1.0 if c[r] > 0 else 0.0
                act_dec[r] += a_byte[r] * read * running + a_seq[r] * k * bf * inv_c0[r]
                K[r] += k
                ctx_sum[r] += k * bf
                tok_o[r] += k * bf
                if fin:
                    K[r] = kend_min[r]  # exact, so the finished slot hits 0
                    _finish(r, tau[r], B, kv, req, phase, kend, k0, ctx0, K, n_occ, n_dec, ctx_sum,
                            kend_min, kv_used, prompt, output, done_t, ctr)
            if seg[a] < rem[a]:
                A[nk] = r
                nk += 1
        nA = nk
        if nA == 0:
            return True
    return False


@jit
def advance_steps(t0, dt, n_steps, n, c, max_events, B, W, kv, chunk, t_pass, kv_cap, max_pf_tokens,
                  params, layers, d_model, u_tensor, u_hbm, Rr, tau_tok, tau_flop, tau_sq, tau_coll,
                  flops_peak, hbm_bw, a_byte, a_seq, req, phase, kend, k0, ctx0, K, n_occ, n_dec,
                  ctx_sum, kend_min, pf_left, pf_batch, pf_tokens, pf_act, kv_used, prefilling, arrival,
                  prompt, output, admitted, first_token, done_t, replica, ctr, act, act_dec, tok_p,
                  tok_o, n_arr, heads, n_done):
    """``n_steps`` consecutive steps of ``dt`` from ``t0`` (:func:`advance` each), the step ends
    accumulated as the pool accumulates its time; per step (rows of ``act`` … ``tok_o``) the
    arrivals up to its end, the queue head and the finished count after it in ``n_arr``,
    ``heads``, ``n_done``. Returns the steps completed (< ``n_steps``: a scheduling bug)."""
    t = t0
    wf, wi, wb, ai, af, ab = work_arrays(c.size, B)
    for s in range(n_steps):
        t_end = t + dt
        n_arr_end = np.searchsorted(arrival[:n], t_end, side="left")
        ok = _advance(t, t_end, n_arr_end, n, c, max_events, B, W, kv, chunk, t_pass, kv_cap,
                     max_pf_tokens, params, layers, d_model, u_tensor, u_hbm, Rr, tau_tok, tau_flop,
                     tau_sq, tau_coll, flops_peak, hbm_bw, a_byte, a_seq, req, phase, kend, k0, ctx0,
                     K, n_occ, n_dec, ctx_sum, kend_min, pf_left, pf_batch, pf_tokens, pf_act, kv_used,
                     prefilling, arrival, prompt, output, admitted, first_token, done_t, replica, ctr,
                     act[s], act_dec[s], tok_p[s], tok_o[s], wf, wi, wb, ai, af, ab)
        if not ok:
            return s
        n_arr[s] = n_arr_end
        heads[s] = ctr[0]
        n_done[s] = ctr[1]
        t = t_end
    return n_steps
