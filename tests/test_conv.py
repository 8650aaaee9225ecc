"""`jaxgames.networks.conv.conv` against ``lax.conv_general_dilated``, and DDPG's `max_pool_2x2` against
``nn.max_pool``.

The custom convolution's forward is XLA's own op (bitwise); its gradient is
another order of the same sums in the two routed cases (large images: the
kernel gradient; tiny images: the input gradient), so those are compared to
autodiff of ``lax.conv_general_dilated`` to float32 rounding, and the half
of the gradient that is still XLA's is compared bitwise. Every other call
must be ``lax.conv_general_dilated`` unchanged (no custom VJP in its jaxpr).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxgames.networks import conv as conv_mod
from jaxgames.networks.conv import conv
from jaxgames.networks.ddpg import max_pool_2x2

NHWC = ("NHWC", "HWIO", "NHWC")
RTOL = 1e-5  # of the reference gradient's norm


def _normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)  # numpy: nothing to compile


def _inputs(n, h, w, c, d, kernel=(3, 3), seed=0):
    x = _normal((n, h, w, c), seed)
    k = _normal(kernel + (c, d), seed + 1000) / np.float32(np.sqrt(c * kernel[0] * kernel[1]))
    return x, k


def _ref(x, k, padding):
    return lax.conv_general_dilated(x, k, (1, 1), padding, dimension_numbers=NHWC)


def _ours(x, k, padding):
    return conv(x, k, (1, 1), padding, dimension_numbers=NHWC)


def _grads(fn, x, k, padding, g):
    """``(output, d/dx, d/dk)`` for the cotangent ``g``, jitted."""
    def f(a, b, c_):
        out, pull = jax.vjp(lambda a_, b_: fn(a_, b_, padding), a, b)
        return (out,) + pull(c_)

    return jax.jit(f)(x, k, g)


def _out_shape(x, k, padding):
    return jax.eval_shape(lambda a, b: _ref(a, b, padding), x, k).shape


def _close(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    assert err < RTOL, err


def _has_custom_vjp(x, k, padding) -> bool:
    return "custom_vjp" in str(jax.make_jaxpr(lambda a, b: _ours(a, b, padding))(x, k))


# (shape n, h, w, c, d; kernel; padding; route): which half of the gradient is replaced
CASES = [
    pytest.param((13, 21, 21, 16, 8), (3, 3), "SAME", "large", id="large-21x21-SAME-batch13"),
    pytest.param((5, 21, 21, 16, 4), (3, 3), "VALID", "large", id="large-21x21-VALID-batch5"),
    pytest.param((7, 2, 2, 12, 6), (3, 3), "SAME", "tiny", id="tiny-2x2-SAME"),
    pytest.param((7, 2, 2, 12, 6), (2, 2), "VALID", "tiny", id="tiny-2x2-VALID"),
    pytest.param((3, 1, 1, 5, 4), (3, 3), "SAME", "tiny", id="tiny-1x1-SAME"),
    pytest.param((6, 5, 5, 10, 8), (3, 3), "SAME", "plain", id="middle-5x5-SAME"),
    pytest.param((6, 5, 5, 10, 8), (3, 3), "VALID", "plain", id="middle-5x5-VALID"),
]


@pytest.mark.parametrize("shape, kernel, padding, route", CASES)
def test_forward_bitwise_and_gradients_match_autodiff(shape, kernel, padding, route):
    n, h, w, c, d = shape
    x, k = _inputs(n, h, w, c, d, kernel)
    assert _has_custom_vjp(x, k, padding) == (route != "plain")
    g = _normal(_out_shape(x, k, padding), 1)
    ref = _grads(_ref, x, k, padding, g)
    got = _grads(_ours, x, k, padding, g)
    np.testing.assert_array_equal(got[0], ref[0])  # the forward is XLA's own convolution
    if route == "large":
        np.testing.assert_array_equal(got[1], ref[1])  # input gradient: XLA's
        _close(got[2], ref[2])
    elif route == "tiny":
        _close(got[1], ref[1])
        np.testing.assert_array_equal(got[2], ref[2])  # kernel gradient: XLA's
    else:
        np.testing.assert_array_equal(got[1], ref[1])
        np.testing.assert_array_equal(got[2], ref[2])


def test_forward_unjitted_is_bitwise():
    x, k = _inputs(13, 21, 21, 16, 8)
    np.testing.assert_array_equal(_ours(x, k, "SAME"), _ref(x, k, "SAME"))
    x, k = _inputs(3, 2, 2, 8, 4)
    np.testing.assert_array_equal(_ours(x, k, "SAME"), _ref(x, k, "SAME"))


@pytest.mark.parametrize("shape, route", [((9, 21, 21, 16, 4), "large"), ((5, 2, 2, 8, 4), "tiny")])
def test_gradients_under_vmap(shape, route):
    n, h, w, c, d = shape
    x, k = _inputs(n, h, w, c, d)
    xs = np.stack([x, -0.5 * x])  # a batch of batches: vmap over the leading axis, the kernel shared

    def loss(fn, a, b):
        return jnp.sum(jnp.tanh(jax.vmap(lambda a_: fn(a_, b, "SAME"))(a)))

    ref = jax.jit(jax.value_and_grad(lambda a, b: loss(_ref, a, b), argnums=(0, 1)))(xs, k)
    got = jax.jit(jax.value_and_grad(lambda a, b: loss(_ours, a, b), argnums=(0, 1)))(xs, k)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6)
    _close(got[1][0], ref[1][0])
    _close(got[1][1], ref[1][1])


@pytest.mark.parametrize("n", [conv_mod.CHUNK - 1, 2 * conv_mod.CHUNK])  # no full chunk; two and no remainder
def test_batch_sizes_around_the_chunk_and_explicit_padding(n):
    pads = ((1, 0), (2, 1))  # uneven explicit padding: an 8x7 output
    x, k = _inputs(n, 8, 8, 16, 4, seed=n)
    assert _has_custom_vjp(x, k, pads)
    g = _normal(_out_shape(x, k, pads), n)
    got, ref = _grads(_ours, x, k, pads, g), _grads(_ref, x, k, pads, g)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    _close(got[2], ref[2])


def test_other_calls_are_lax_unchanged():
    x, k = _inputs(3, 21, 21, 16, 4)
    # few input channels, strides, dilation and another layout keep XLA's convolution and its gradient
    assert not _has_custom_vjp(x[..., :3], k[:, :, :3], "SAME")
    assert "custom_vjp" not in str(jax.make_jaxpr(
        lambda a, b: conv(a, b, (2, 2), "SAME", dimension_numbers=NHWC))(x, k))
    assert "custom_vjp" not in str(jax.make_jaxpr(
        lambda a, b: conv(a, b, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=NHWC))(x, k))
    xn = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    kn = np.ascontiguousarray(np.transpose(k, (3, 2, 0, 1)))
    out = conv(xn, kn, (1, 1), "SAME")  # NCHW / OIHW (dimension_numbers=None)
    np.testing.assert_array_equal(out, lax.conv_general_dilated(xn, kn, (1, 1), "SAME"))


def test_flax_conv_has_the_parameter_tree_and_output_of_nn_conv():
    x, _ = _inputs(4, 21, 21, 16, 1)
    for kw in (dict(padding="SAME"), dict(padding="SAME", use_bias=False)):
        plain = nn.Conv(8, (3, 3), **kw)
        ours = nn.Conv(8, (3, 3), conv_general_dilated=conv, **kw)
        p0 = jax.jit(plain.init)(jax.random.key(2), x)
        p1 = jax.jit(ours.init)(jax.random.key(2), x)
        assert jax.tree.structure(p0) == jax.tree.structure(p1)
        for a, b in zip(jax.tree.leaves(p0), jax.tree.leaves(p1)):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(jax.jit(ours.apply)(p1, x), jax.jit(plain.apply)(p0, x))


# ----------------------------------------------------------------------------- DDPG's max-pool
def _pool_ref(x):
    return nn.max_pool(x, (2, 2), strides=(2, 2), padding="VALID")


def _pool_and_grad(pool, x, g):
    def f(a, c_):
        out, pull = jax.vjp(pool, a)
        return out, pull(c_)[0]

    return jax.jit(f)(x, g)


@pytest.mark.parametrize("hw", [(5, 5), (2, 2), (3, 4)])
def test_max_pool_2x2_values_and_gradient_are_nn_max_pool(hw):
    rng = np.random.default_rng(hw[0] * 10 + hw[1])
    shape = (8,) + hw + (3,)
    # half the batch continuous (negative and positive), half few distinct values: many windows with several maxima
    x = np.concatenate([rng.standard_normal(shape).astype(np.float32) - 0.5,
                        rng.integers(-3, 2, shape).astype(np.float32)])
    x[-1] = -2.0  # every window a four-way tie
    g = _normal((16, hw[0] // 2, hw[1] // 2, 3), 7)
    out, grad = _pool_and_grad(max_pool_2x2, x, g)
    ref, grad_ref = _pool_and_grad(_pool_ref, x, g)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(grad, grad_ref)  # each window's cotangent goes to its first maximum
