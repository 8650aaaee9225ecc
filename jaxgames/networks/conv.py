"""A drop-in ``conv_general_dilated`` for ``flax.linen.Conv`` whose gradient is cheaper on XLA's CPU backend.

`conv` computes XLA's own convolution forward and gives it a custom
gradient in two cases where XLA:CPU's is slow (figures:
``benchmarks/networks.py``, ``benchmarks/README.md``, "Networks near the machine"):

* **large images** (at least `MIN_PIXELS` pixels, `MIN_CHANNELS` input
  channels; the 21x21 Q-snake views): XLA computes the kernel gradient as one
  convolution with a 21x21 window over the whole batch, at about 25 GFLOP/s
  for 64 or more channels against 130 GFLOP/s forward. Here it is, for each
  of the ``kh x kw`` kernel offsets, one matrix product of the shifted input
  with the output gradient, accumulated over chunks of `CHUNK` examples in a
  ``lax.fori_loop`` (the shifted copies stay in cache): 3-5x faster at 64-128
  channels. The input gradient is XLA's (bitwise the same).
* **tiny images** (at most `TINY_PIXELS` pixels: the 2x2 maps of the DDPG
  networks after a pool): XLA rewrites the input gradient into a convolution
  of a layout its CPU backend runs as a plain loop (about 9 GFLOP/s). Here it
  is one matrix product per kernel offset that touches the image, added into
  place. The kernel gradient is XLA's (bitwise the same).

The forward output is XLA's convolution itself (the same HLO op), so it is
bitwise equal, and the parameter tree is ``Conv``'s. The replaced gradient is
the same sum in another order: equal up to float32 rounding
(``python benchmarks/networks.py check=true``). Only stride 1, no dilation,
one feature group and NHWC/HWIO take a custom gradient; every other call,
and every image between the two sizes, is ``lax.conv_general_dilated`` unchanged.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

CHUNK = 8
"""Examples per step of the large-image kernel gradient's loop (4-8 measured best at 16-128 channels on 21x21)."""

MIN_PIXELS = 64
"""Smallest image (H x W) that takes the loop kernel gradient (Dots-and-Boxes and Onitama boards do not)."""

MIN_CHANNELS = 16
"""Fewest input channels that take the loop kernel gradient (a first layer over 3 planes does not)."""

TINY_PIXELS = 4
"""Largest image (H x W) that takes the matrix-product input gradient."""

_NHWC = ("NHWC", "HWIO", "NHWC")


def _is_nhwc(dimension_numbers, ndim: int) -> bool:
    if ndim != 4 or dimension_numbers is None:
        return False
    if isinstance(dimension_numbers, lax.ConvDimensionNumbers):
        return tuple(dimension_numbers) == tuple(lax.conv_dimension_numbers((1, 1, 1, 1), (1, 1, 1, 1), _NHWC))
    return tuple(dimension_numbers) == _NHWC


def _pads(padding, kernel_hw) -> tuple[tuple[int, int], ...] | None:
    """Explicit ``((lo, hi), (lo, hi))`` padding of a stride-1 convolution, or None if not understood."""
    if isinstance(padding, str):
        if padding.upper() == "SAME":
            return tuple(((k - 1) // 2, k // 2) for k in kernel_hw)
        if padding.upper() == "VALID":
            return ((0, 0), (0, 0))
        return None
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        return None
    return pads if len(pads) == 2 else None


def _xla_conv(x, w, pads, precision):
    return lax.conv_general_dilated(x, w, (1, 1), pads, dimension_numbers=_NHWC, precision=precision)


def _kernel_grad_loop(x, g, pads, kernel_hw):
    """d(loss)/d(kernel) ``[kh, kw, C, D]`` from the input ``x`` and output gradient ``g`` (module docstring)."""
    n, _, _, c = x.shape
    _, ho, wo, d = g.shape
    kh, kw = kernel_hw
    xp = jnp.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))

    def offsets(xc, gc):
        g2 = gc.reshape(-1, d)
        rows = [xc[:, i:i + ho, j:j + wo, :].reshape(-1, c).T @ g2 for i in range(kh) for j in range(kw)]
        return jnp.stack(rows).reshape(kh, kw, c, d)

    full = n // CHUNK
    acc = jnp.zeros((kh, kw, c, d), jnp.result_type(x, g))
    if full:
        xs = xp[:full * CHUNK].reshape((full, CHUNK) + xp.shape[1:])
        gs = g[:full * CHUNK].reshape((full, CHUNK) + g.shape[1:])
        acc = lax.fori_loop(0, full, lambda k, a: a + offsets(xs[k], gs[k]), acc)
    if n % CHUNK:
        acc = acc + offsets(xp[full * CHUNK:], g[full * CHUNK:])
    return acc


def _input_grad_products(g, w, pads, image_hw):
    """d(loss)/d(input) ``[N, H, W, C]`` from the output gradient ``g`` and the kernel ``w`` (module docstring)."""
    kh, kw, c, d = w.shape
    n, ho, wo, _ = g.shape
    h, wd = image_hw
    out = jnp.zeros((n, h, wd, c), jnp.result_type(g, w))
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i - pads[0][0], j - pads[1][0]  # output (p, q) reads input (p + r0, q + c0)
            ps, pe = max(0, -r0), min(ho, h - r0)
            qs, qe = max(0, -c0), min(wo, wd - c0)
            if ps >= pe or qs >= qe:
                continue
            part = (g[:, ps:pe, qs:qe, :].reshape(-1, d) @ w[i, j].T).reshape(n, pe - ps, qe - qs, c)
            out = out.at[:, ps + r0:pe + r0, qs + c0:qe + c0, :].add(part)
    return out


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4))
def _conv(x, w, pads, precision, mode):
    return _xla_conv(x, w, pads, precision)


def _conv_fwd(x, w, pads, precision, mode):
    return _xla_conv(x, w, pads, precision), (x, w)


def _conv_bwd(pads, precision, mode, res, g):
    x, w = res
    if mode == "large":
        dx, = jax.vjp(lambda x_: _xla_conv(x_, w, pads, precision), x)[1](g)
        dw = _kernel_grad_loop(x, g, pads, w.shape[:2])
    else:
        dx = _input_grad_products(g, w, pads, x.shape[1:3])
        dw, = jax.vjp(lambda w_: _xla_conv(x, w_, pads, precision), w)[1](g)
    return dx.astype(x.dtype), dw.astype(w.dtype)


_conv.defvjp(_conv_fwd, _conv_bwd)


def conv(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
         feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None):
    """``lax.conv_general_dilated``'s signature and result; the cheaper gradient where it applies (module docstring).

    Pass it as ``nn.Conv(..., conv_general_dilated=conv)``.
    """
    mode = None
    if (_is_nhwc(dimension_numbers, jnp.ndim(lhs)) and tuple(window_strides) == (1, 1)
            and all(d in (None, 1) for d in tuple(lhs_dilation or ()) + tuple(rhs_dilation or ()))
            and feature_group_count == 1 and batch_group_count == 1 and preferred_element_type is None):
        pixels = lhs.shape[1] * lhs.shape[2]
        if pixels >= MIN_PIXELS and lhs.shape[3] >= MIN_CHANNELS:
            mode = "large"
        elif pixels <= TINY_PIXELS:
            mode = "tiny"
    pads = _pads(padding, rhs.shape[:2]) if mode else None
    if pads is None:
        return lax.conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                                        feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                                        precision=precision, preferred_element_type=preferred_element_type)
    return _conv(lhs, rhs, pads, precision, mode)
