r"""Softmax attention's kernel as the entry-wise theory takes it.

``K = (n/sqrt(p)) row-softmax(S)``, ``S = X^T W X/sqrt(p)`` with the mask ``S_ii = -inf``, has in the limit the
``E_A`` of the entry-wise kernel of ``h(t) = exp(t - alpha^2/2) - 1`` with the same geometry (Hermite data
under ``N(0, alpha^2)``: ``a_1 = alpha``, ``nu = exp(alpha^2) - 1``, ``d = 0``).  :func:`softmax_nonlinearity`
builds that ``h``, :func:`softmax_text` writes it, and :func:`check_mask` refuses the unmasked softmax, which
has no limit in this scaling.  The derivation is in ``docs/theory.md`` section 11.

>>> softmax_text(1)
'exp(t - 1/2) - 1'
>>> softmax_text("3/2")
'exp(t - 9/8) - 1'
"""

from __future__ import annotations

from fractions import Fraction

from symrmt.errors import ParameterError

__all__ = ["softmax_text", "softmax_nonlinearity", "UNMASKED_REASON", "TEST_ERROR_REASON", "check_softmax_f",
           "check_mask"]

#: why the unmasked softmax has no limit here (the error of ``limit(..., mask=False)``)
UNMASKED_REASON = ("the unmasked softmax has no limit in this scaling: S_ii = x_i^T W x_i/sqrt(p) ~ alpha sqrt(p) "
                   "dominates its row, so A tends to the identity and E_A goes flat in gamma; simulate it "
                   "(--no-mask) or use the masked model")


#: why the softmax's test error is refused (``limit(..., attention="softmax", error="test")``, exit 3)
TEST_ERROR_REASON = (
    "the softmax's test error is not derived: the reduction of docs/theory.md section 11 (the masked softmax is the "
    "entry-wise kernel of h(t) = exp(t - alpha^2/2) - 1 plus the spike 1 1^T/sqrt(p) and the projection "
    "I - 1 1^T/n) is proved for E_A, which sees the readout only through y^T Q^2 y/n, where the spike's "
    "direction drops out; the test error needs the readout w = X K Q y/n itself (its norm and its inner products "
    "with mu, w_K, w_Q), and the argument does not bound w's part along X 1/sqrt(p), a vector of norm sqrt(n)")


def softmax_text(alpha=1) -> str:
    """The text of ``h(t) = exp(t - alpha^2/2) - 1``, ``alpha`` exact (the scale of ``W``'s identity part).

    Takes ``alpha`` as an int, a Fraction or a string such as ``"3/2"``; raises
    :class:`~symrmt.errors.ParameterError` when ``alpha <= 0``.

    >>> softmax_text("1/2")
    'exp(t - 1/8) - 1'
    >>> softmax_text(0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: alpha must be positive, got 0
    """
    a = Fraction(alpha)
    if a <= 0:
        raise ParameterError(f"alpha must be positive, got {alpha!r}")
    return f"exp(t - {a * a / 2}) - 1"


def softmax_nonlinearity(alpha=1):
    """``h`` in the form the entry-wise solver takes for ``W = alpha I + ...``: a centered
    :class:`~symrmt.hermite.Nonlinearity` for ``alpha = 1``, else the text of ``h``, which the
    solver rescales to ``h(alpha t)`` and checks centered there
    (``E h(alpha xi) = exp(alpha^2/2 - alpha^2/2) - 1 = 0``; :func:`symrmt.models.attention.theory.scaled_nonlinearity`).

    Raises :class:`~symrmt.errors.ParameterError` when ``alpha <= 0``.

    >>> softmax_nonlinearity(2)
    'exp(t - 2) - 1'
    """
    # import-time cost: the softmax kernel loads no SymPy, mpmath or NumPy
    from symrmt.models.attention.kernel_f import as_nonlinearity

    a = Fraction(alpha)
    return as_nonlinearity(softmax_text(a)) if a == 1 else softmax_text(a)


def check_softmax_f(f) -> None:
    """``f`` must be absent for the softmax (it fixes the kernel): returns None for ``f=None``, raises
    :class:`~symrmt.errors.ParameterError` otherwise.

    >>> check_softmax_f(None)
    >>> check_softmax_f("tanh")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: attention='softmax' fixes the kernel (a row softmax), so f must not be given (got 'tanh'); f is for the entry-wise kernel
    """
    if f is not None:
        raise ParameterError(f"attention='softmax' fixes the kernel (a row softmax), so f must not be given "
                             f"(got {f!r}); f is for the entry-wise kernel")


def check_mask(mask) -> None:
    """The limit exists for the masked softmax only: returns None for ``mask=True``; raises
    :class:`~symrmt.errors.ParameterError` with :data:`UNMASKED_REASON` for ``False`` and for anything
    that is not a bool.

    >>> check_mask(True)
    >>> check_mask(1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: mask must be True or False, got 1
    """
    if mask is False:
        raise ParameterError(UNMASKED_REASON)
    if mask is not True:
        raise ParameterError(f"mask must be True or False, got {mask!r}")
