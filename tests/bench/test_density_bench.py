"""The density rows of ``symrmt bench``: a quick run (fewer points than the target's 400) says so in the note."""

from symrmt.bench.density import verdicts


def _rows(points):
    rows = []
    law = {"law": "Marchenko-Pastur", "ratio": 7.0, "seconds": 0.09, "float_points": points, "min_digits": 15}
    res = {"density": {"mp": {"seconds": 1.0, "points": points}, "tanh": {"seconds": 1.0, "points": points}},
           "density_fast": {"points": points, "laws": [law], "eigvalsh_400_s": 0.0128}}
    verdicts(res, lambda name, value, target, met, note="": rows.append((name, met, note)))
    return [r for r in rows if r[0].startswith("density --fast")]


def test_quick_fast_density_rows_say_they_are_not_judged():
    (name, met, note), = _rows(40)
    assert met is None and "quick" in note
    (name, met, note), = _rows(400)
    assert met is False and "quick" not in note
