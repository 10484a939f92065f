"""Float helpers that give IEEE 754 results where Python's math module would raise.

The course's C# chapter relies on IEEE arithmetic: log(0) is -Infinity, log of a negative
number is NaN, a negative number to a fractional power is NaN, overflow is Infinity.
Python raises instead (ValueError, OverflowError, ZeroDivisionError) or returns a complex
number, so every operation that can do so goes through one of these.
"""

import math

INF = math.inf
NAN = math.nan


def log(x: float) -> float:
    if x > 0:
        return math.log(x)
    if x == 0:
        return -INF
    return NAN  # negative, or NaN already


def exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def divide(x: float, y: float) -> float:
    try:
        return x / y
    except ZeroDivisionError:
        if x == 0 or x != x:
            return NAN
        return math.copysign(INF, x) * math.copysign(1.0, y)


def power(x: float, n: float) -> float:
    """x ** n as C#'s Math.Pow (IEEE 754 pow): n == 0 or x == 1 give 1, even with NaN; a finite
    negative base with a finite non-integer exponent is NaN, checked first, so an overflowing
    or underflowing magnitude cannot turn it into Infinity or 0."""
    if n == 0 or x == 1:
        return 1.0
    if x != x or n != n:
        return NAN
    if x < 0 and math.isfinite(x) and math.isfinite(n) and not float(n).is_integer():
        return NAN
    try:
        return math.pow(x, n)
    except OverflowError:
        return -INF if x < 0 and _is_odd_integer(n) else INF
    except ValueError:  # zero to a negative power (math.pow's C99 "divide by zero")
        return math.copysign(INF, x) if _is_odd_integer(n) else INF


def _is_odd_integer(n: float) -> bool:
    return math.isfinite(n) and n % 2 == 1
