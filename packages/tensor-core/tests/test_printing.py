"""Tensor printing: repr/str must read exactly like PyTorch's.

Every expected string below was produced by PyTorch 2.13 (torch/_tensor_str.py) for
the same data, with `torch.` replaced by `ember.`; PyTorch is not needed to run
these tests.
"""
from __future__ import annotations

import time

import pytest

import ember as em
from ember._C import core as _core


@pytest.fixture(autouse=True)
def default_printoptions():
    em.set_printoptions(profile="default")
    yield
    em.set_printoptions(profile="default")


# (print options, tensor, what PyTorch prints for it)
CASES = [
    ({}, lambda: em.tensor([[1., 2.], [3., 4.]]), """\
tensor([[1., 2.],
        [3., 4.]])"""),
    ({}, lambda: em.tensor([1, 2], dtype=em.int32), """\
tensor([1, 2], dtype=ember.int32)"""),
    ({}, lambda: em.tensor([1, 2]), """\
tensor([1, 2])"""),
    ({}, lambda: em.tensor([True, False]), """\
tensor([ True, False])"""),
    ({}, lambda: em.tensor(3.5), """\
tensor(3.5000)"""),
    ({}, lambda: em.tensor(7), """\
tensor(7)"""),
    ({}, lambda: em.tensor(7, dtype=em.int16), """\
tensor(7, dtype=ember.int16)"""),
    ({}, lambda: em.tensor(True), """\
tensor(True)"""),
    ({}, lambda: em.tensor([1.5, 2.25], dtype=em.float64), """\
tensor([1.5000, 2.2500], dtype=ember.float64)"""),
    ({}, lambda: em.tensor([1.5, 2.25], dtype=em.float16), """\
tensor([1.5000, 2.2500], dtype=ember.float16)"""),
    ({}, lambda: em.tensor([255, 0, 7], dtype=em.uint8), """\
tensor([255,   0,   7], dtype=ember.uint8)"""),
    ({}, lambda: em.tensor([-128, 127], dtype=em.int8), """\
tensor([-128,  127], dtype=ember.int8)"""),
    ({}, lambda: em.zeros(0, 3), """\
tensor([], size=(0, 3))"""),
    ({}, lambda: em.zeros(0), """\
tensor([])"""),
    ({}, lambda: em.zeros(0, dtype=em.int64), """\
tensor([], dtype=ember.int64)"""),
    ({}, lambda: em.zeros(2, 0, 3, dtype=em.bool), """\
tensor([], size=(2, 0, 3), dtype=ember.bool)"""),
    ({}, lambda: em.zeros(0, dtype=em.float64), """\
tensor([], dtype=ember.float64)"""),
    ({}, lambda: em.tensor([float('nan'), float('inf'), -float('inf'), 1.5]), """\
tensor([   nan,    inf,   -inf, 1.5000])"""),
    ({}, lambda: em.tensor([float('nan'), float('inf'), -float('inf'), 1.0]), """\
tensor([nan, inf, -inf, 1.])"""),
    ({}, lambda: em.tensor(float('nan')), """\
tensor(nan)"""),
    ({}, lambda: em.tensor(-float('inf'), dtype=em.float64), """\
tensor(-inf, dtype=ember.float64)"""),
    ({}, lambda: em.tensor([-0.0, 0.0]), """\
tensor([-0., 0.])"""),
    ({}, lambda: em.tensor(-0.0), """\
tensor(-0.)"""),
    ({}, lambda: em.tensor([-0.0, 1.5]), """\
tensor([-0.0000, 1.5000])"""),
    ({}, lambda: em.tensor([0.1, 1e-5]), """\
tensor([1.0000e-01, 1.0000e-05])"""),
    ({}, lambda: em.tensor([1e9, 1.0]), """\
tensor([1.0000e+09, 1.0000e+00])"""),
    ({}, lambda: em.tensor([1e-5], dtype=em.float64), """\
tensor([1.0000e-05], dtype=ember.float64)"""),
    ({}, lambda: em.tensor([123456.789, 0.5], dtype=em.float64), """\
tensor([1.2346e+05, 5.0000e-01], dtype=ember.float64)"""),
    ({}, lambda: em.tensor([1., 1000., 1001.]), """\
tensor([1.0000e+00, 1.0000e+03, 1.0010e+03])"""),
    ({}, lambda: em.tensor([1., 1e8]), """\
tensor([1.0000e+00, 1.0000e+08])"""),
    ({}, lambda: em.tensor([1., 1e9]), """\
tensor([1.0000e+00, 1.0000e+09])"""),
    ({}, lambda: em.tensor([1e300, -1e-300], dtype=em.float64), """\
tensor([ 1.0000e+300, -1.0000e-300], dtype=ember.float64)"""),
    ({}, lambda: em.arange(2000.), """\
tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,
        1.9990e+03])"""),
    ({}, lambda: em.arange(2000), """\
tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"""),
    ({}, lambda: em.arange(100), """\
tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,
        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,
        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])"""),
    ({}, lambda: em.arange(1001).reshape(1001, 1), """\
tensor([[   0],
        [   1],
        [   2],
        ...,
        [ 998],
        [ 999],
        [1000]])"""),
    ({}, lambda: em.arange(30000.).reshape(100, 300) / 7, """\
tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 4.2429e+01, 4.2571e+01,
         4.2714e+01],
        [4.2857e+01, 4.3000e+01, 4.3143e+01,  ..., 8.5286e+01, 8.5429e+01,
         8.5571e+01],
        [8.5714e+01, 8.5857e+01, 8.6000e+01,  ..., 1.2814e+02, 1.2829e+02,
         1.2843e+02],
        ...,
        [4.1571e+03, 4.1573e+03, 4.1574e+03,  ..., 4.1996e+03, 4.1997e+03,
         4.1999e+03],
        [4.2000e+03, 4.2001e+03, 4.2003e+03,  ..., 4.2424e+03, 4.2426e+03,
         4.2427e+03],
        [4.2429e+03, 4.2430e+03, 4.2431e+03,  ..., 4.2853e+03, 4.2854e+03,
         4.2856e+03]])"""),
    ({}, lambda: em.arange(1200.).reshape(4, 3, 100) / 7, """\
tensor([[[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.3857e+01,
          1.4000e+01, 1.4143e+01],
         [1.4286e+01, 1.4429e+01, 1.4571e+01,  ..., 2.8143e+01,
          2.8286e+01, 2.8429e+01],
         [2.8571e+01, 2.8714e+01, 2.8857e+01,  ..., 4.2429e+01,
          4.2571e+01, 4.2714e+01]],

        [[4.2857e+01, 4.3000e+01, 4.3143e+01,  ..., 5.6714e+01,
          5.6857e+01, 5.7000e+01],
         [5.7143e+01, 5.7286e+01, 5.7429e+01,  ..., 7.1000e+01,
          7.1143e+01, 7.1286e+01],
         [7.1429e+01, 7.1571e+01, 7.1714e+01,  ..., 8.5286e+01,
          8.5429e+01, 8.5571e+01]],

        [[8.5714e+01, 8.5857e+01, 8.6000e+01,  ..., 9.9571e+01,
          9.9714e+01, 9.9857e+01],
         [1.0000e+02, 1.0014e+02, 1.0029e+02,  ..., 1.1386e+02,
          1.1400e+02, 1.1414e+02],
         [1.1429e+02, 1.1443e+02, 1.1457e+02,  ..., 1.2814e+02,
          1.2829e+02, 1.2843e+02]],

        [[1.2857e+02, 1.2871e+02, 1.2886e+02,  ..., 1.4243e+02,
          1.4257e+02, 1.4271e+02],
         [1.4286e+02, 1.4300e+02, 1.4314e+02,  ..., 1.5671e+02,
          1.5686e+02, 1.5700e+02],
         [1.5714e+02, 1.5729e+02, 1.5743e+02,  ..., 1.7100e+02,
          1.7114e+02, 1.7129e+02]]])"""),
    ({}, lambda: em.arange(24.).reshape(2, 3, 4), """\
tensor([[[ 0.,  1.,  2.,  3.],
         [ 4.,  5.,  6.,  7.],
         [ 8.,  9., 10., 11.]],

        [[12., 13., 14., 15.],
         [16., 17., 18., 19.],
         [20., 21., 22., 23.]]])"""),
    ({}, lambda: em.arange(24, dtype=em.int8).reshape(2, 3, 4), """\
tensor([[[ 0,  1,  2,  3],
         [ 4,  5,  6,  7],
         [ 8,  9, 10, 11]],

        [[12, 13, 14, 15],
         [16, 17, 18, 19],
         [20, 21, 22, 23]]], dtype=ember.int8)"""),
    ({}, lambda: em.arange(48.).reshape(2, 3, 2, 4) - 20, """\
tensor([[[[-20., -19., -18., -17.],
          [-16., -15., -14., -13.]],

         [[-12., -11., -10.,  -9.],
          [ -8.,  -7.,  -6.,  -5.]],

         [[ -4.,  -3.,  -2.,  -1.],
          [  0.,   1.,   2.,   3.]]],


        [[[  4.,   5.,   6.,   7.],
          [  8.,   9.,  10.,  11.]],

         [[ 12.,  13.,  14.,  15.],
          [ 16.,  17.,  18.,  19.]],

         [[ 20.,  21.,  22.,  23.],
          [ 24.,  25.,  26.,  27.]]]])"""),
    ({}, lambda: em.arange(100, dtype=em.float64) * 1.37, """\
tensor([  0.0000,   1.3700,   2.7400,   4.1100,   5.4800,   6.8500,   8.2200,
          9.5900,  10.9600,  12.3300,  13.7000,  15.0700,  16.4400,  17.8100,
         19.1800,  20.5500,  21.9200,  23.2900,  24.6600,  26.0300,  27.4000,
         28.7700,  30.1400,  31.5100,  32.8800,  34.2500,  35.6200,  36.9900,
         38.3600,  39.7300,  41.1000,  42.4700,  43.8400,  45.2100,  46.5800,
         47.9500,  49.3200,  50.6900,  52.0600,  53.4300,  54.8000,  56.1700,
         57.5400,  58.9100,  60.2800,  61.6500,  63.0200,  64.3900,  65.7600,
         67.1300,  68.5000,  69.8700,  71.2400,  72.6100,  73.9800,  75.3500,
         76.7200,  78.0900,  79.4600,  80.8300,  82.2000,  83.5700,  84.9400,
         86.3100,  87.6800,  89.0500,  90.4200,  91.7900,  93.1600,  94.5300,
         95.9000,  97.2700,  98.6400, 100.0100, 101.3800, 102.7500, 104.1200,
        105.4900, 106.8600, 108.2300, 109.6000, 110.9700, 112.3400, 113.7100,
        115.0800, 116.4500, 117.8200, 119.1900, 120.5600, 121.9300, 123.3000,
        124.6700, 126.0400, 127.4100, 128.7800, 130.1500, 131.5200, 132.8900,
        134.2600, 135.6300], dtype=ember.float64)"""),
    ({}, lambda: em.arange(60.) * 1e6, """\
tensor([       0.,  1000000.,  2000000.,  3000000.,  4000000.,  5000000.,
         6000000.,  7000000.,  8000000.,  9000000., 10000000., 11000000.,
        12000000., 13000000., 14000000., 15000000., 16000000., 17000000.,
        18000000., 19000000., 20000000., 21000000., 22000000., 23000000.,
        24000000., 25000000., 26000000., 27000000., 28000000., 29000000.,
        30000000., 31000000., 32000000., 33000000., 34000000., 35000000.,
        36000000., 37000000., 38000000., 39000000., 40000000., 41000000.,
        42000000., 43000000., 44000000., 45000000., 46000000., 47000000.,
        48000000., 49000000., 50000000., 51000000., 52000000., 53000000.,
        54000000., 55000000., 56000000., 57000000., 58000000., 59000000.])"""),
    ({}, lambda: em.arange(100) * 123456789, """\
tensor([          0,   123456789,   246913578,   370370367,   493827156,
          617283945,   740740734,   864197523,   987654312,  1111111101,
         1234567890,  1358024679,  1481481468,  1604938257,  1728395046,
         1851851835,  1975308624,  2098765413,  2222222202,  2345678991,
         2469135780,  2592592569,  2716049358,  2839506147,  2962962936,
         3086419725,  3209876514,  3333333303,  3456790092,  3580246881,
         3703703670,  3827160459,  3950617248,  4074074037,  4197530826,
         4320987615,  4444444404,  4567901193,  4691357982,  4814814771,
         4938271560,  5061728349,  5185185138,  5308641927,  5432098716,
         5555555505,  5679012294,  5802469083,  5925925872,  6049382661,
         6172839450,  6296296239,  6419753028,  6543209817,  6666666606,
         6790123395,  6913580184,  7037036973,  7160493762,  7283950551,
         7407407340,  7530864129,  7654320918,  7777777707,  7901234496,
         8024691285,  8148148074,  8271604863,  8395061652,  8518518441,
         8641975230,  8765432019,  8888888808,  9012345597,  9135802386,
         9259259175,  9382715964,  9506172753,  9629629542,  9753086331,
         9876543120,  9999999909, 10123456698, 10246913487, 10370370276,
        10493827065, 10617283854, 10740740643, 10864197432, 10987654221,
        11111111010, 11234567799, 11358024588, 11481481377, 11604938166,
        11728394955, 11851851744, 11975308533, 12098765322, 12222222111])"""),
    ({}, lambda: em.arange(20, dtype=em.int32) * 1000, """\
tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,
        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000],
       dtype=ember.int32)"""),
    ({}, lambda: em.arange(15, dtype=em.float16) / 3, """\
tensor([0.0000, 0.3333, 0.6665, 1.0000, 1.3330, 1.6670, 2.0000, 2.3340, 2.6660,
        3.0000, 3.3340, 3.6660, 4.0000, 4.3320, 4.6680], dtype=ember.float16)"""),
    ({}, lambda: em.arange(20.).reshape(4, 5).T, """\
tensor([[ 0.,  5., 10., 15.],
        [ 1.,  6., 11., 16.],
        [ 2.,  7., 12., 17.],
        [ 3.,  8., 13., 18.],
        [ 4.,  9., 14., 19.]])"""),
    ({}, lambda: em.arange(2000.).reshape(40, 50).T, """\
tensor([[0.0000e+00, 5.0000e+01, 1.0000e+02,  ..., 1.8500e+03, 1.9000e+03,
         1.9500e+03],
        [1.0000e+00, 5.1000e+01, 1.0100e+02,  ..., 1.8510e+03, 1.9010e+03,
         1.9510e+03],
        [2.0000e+00, 5.2000e+01, 1.0200e+02,  ..., 1.8520e+03, 1.9020e+03,
         1.9520e+03],
        ...,
        [4.7000e+01, 9.7000e+01, 1.4700e+02,  ..., 1.8970e+03, 1.9470e+03,
         1.9970e+03],
        [4.8000e+01, 9.8000e+01, 1.4800e+02,  ..., 1.8980e+03, 1.9480e+03,
         1.9980e+03],
        [4.9000e+01, 9.9000e+01, 1.4900e+02,  ..., 1.8990e+03, 1.9490e+03,
         1.9990e+03]])"""),
    ({}, lambda: em.tensor([[True, False], [False, True]]), """\
tensor([[ True, False],
        [False,  True]])"""),
    ({}, lambda: em.ones(2, 3).expand(1000, 2, 3), """\
tensor([[[1., 1., 1.],
         [1., 1., 1.]],

        [[1., 1., 1.],
         [1., 1., 1.]],

        [[1., 1., 1.],
         [1., 1., 1.]],

        ...,

        [[1., 1., 1.],
         [1., 1., 1.]],

        [[1., 1., 1.],
         [1., 1., 1.]],

        [[1., 1., 1.],
         [1., 1., 1.]]])"""),
    ({}, lambda: em.tensor([1., 2.], requires_grad=True), """\
tensor([1., 2.], requires_grad=True)"""),
    ({}, lambda: em.tensor(2.5, dtype=em.float64, requires_grad=True), """\
tensor(2.5000, dtype=ember.float64, requires_grad=True)"""),
    ({}, lambda: em.arange(3000.).requires_grad_(), """\
tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 2.9970e+03, 2.9980e+03,
        2.9990e+03], requires_grad=True)"""),
    ({}, lambda: em.arange(25, dtype=em.int32) * 1000, """\
tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,
        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,
        20000, 21000, 22000, 23000, 24000], dtype=ember.int32)"""),
    (dict(precision=2), lambda: em.tensor([1.12345, 2.5]), """\
tensor([1.12, 2.50])"""),
    (dict(precision=8), lambda: em.tensor([1.12345, 2.5], dtype=em.float64), """\
tensor([1.12345000, 2.50000000], dtype=ember.float64)"""),
    (dict(threshold=5), lambda: em.arange(10), """\
tensor([0, 1, 2,  ..., 7, 8, 9])"""),
    (dict(threshold=5, edgeitems=1), lambda: em.arange(24.).reshape(2, 3, 4), """\
tensor([[[ 0.,  ...,  3.],
         ...,
         [ 8.,  ..., 11.]],

        [[12.,  ..., 15.],
         ...,
         [20.,  ..., 23.]]])"""),
    (dict(linewidth=40), lambda: em.arange(30.) / 3, """\
tensor([0.0000, 0.3333, 0.6667, 1.0000,
        1.3333, 1.6667, 2.0000, 2.3333,
        2.6667, 3.0000, 3.3333, 3.6667,
        4.0000, 4.3333, 4.6667, 5.0000,
        5.3333, 5.6667, 6.0000, 6.3333,
        6.6667, 7.0000, 7.3333, 7.6667,
        8.0000, 8.3333, 8.6667, 9.0000,
        9.3333, 9.6667])"""),
    (dict(linewidth=40), lambda: em.arange(12, dtype=em.int16), """\
tensor([ 0,  1,  2,  3,  4,  5,  6,  7,
         8,  9, 10, 11],
       dtype=ember.int16)"""),
    (dict(sci_mode=True), lambda: em.tensor([1.5, 2.25]), """\
tensor([1.5000e+00, 2.2500e+00])"""),
    (dict(sci_mode=False), lambda: em.tensor([1e-5, 1e9]), """\
tensor([         0.0000, 1000000000.0000])"""),
    (dict(profile='short'), lambda: em.arange(2000.) / 3, """\
tensor([0.00e+00, 3.33e-01,  ..., 6.66e+02, 6.66e+02])"""),
    (dict(edgeitems=0, threshold=10), lambda: em.arange(24.).reshape(2, 3, 4), """\
tensor([...], size=(2, 3, 4))"""),
    (dict(edgeitems=0, threshold=10), lambda: em.arange(24), """\
tensor([...], size=(24,))"""),
    (dict(edgeitems=0), lambda: em.tensor([1., 2.]), """\
tensor([1., 2.], size=(2,))"""),
]


@pytest.mark.parametrize("options, make, expected", CASES)
def test_repr_matches_pytorch(options, make, expected):
    t = make()
    em.set_printoptions(**options)
    assert repr(t) == expected
    assert str(t) == expected


def test_format_and_print_use_the_same_text(capsys):
    t = em.tensor([[1., 2.], [3., 4.]])
    print(t)
    assert capsys.readouterr().out == "tensor([[1., 2.],\n        [3., 4.]])\n"
    assert f"{t}" == repr(t)
    assert f"{em.tensor(2.5):.2f}" == "2.50"


def test_views_print_their_own_elements():
    base = em.arange(12).reshape(3, 4)
    assert repr(base.T) == ("tensor([[ 0,  4,  8],\n        [ 1,  5,  9],\n"
                            "        [ 2,  6, 10],\n        [ 3,  7, 11]])")
    row = base._view((4,), (1,), 8)                  # base[2]
    assert repr(row) == "tensor([ 8,  9, 10, 11])"
    col = base._view((3,), (4,), 1)                  # base[:, 1]
    assert repr(col) == "tensor([1, 5, 9])"


def test_default_dtype_follows_set_default_dtype():
    old = em.get_default_dtype()
    try:
        em.set_default_dtype(em.float64)
        assert repr(em.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
        assert repr(em.tensor([1.5], dtype=em.float32)) == "tensor([1.5000], dtype=ember.float32)"
        assert repr(em.zeros(0, dtype=em.float32)) == "tensor([], dtype=ember.float32)"
    finally:
        em.set_default_dtype(old)


# ------------------------------------------------------------------------ print options

def test_get_printoptions_defaults():
    assert em.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3,
                                     "linewidth": 80, "sci_mode": None}


def test_set_printoptions_profiles():
    em.set_printoptions(profile="short")
    assert em.get_printoptions()["precision"] == 2
    assert em.get_printoptions()["edgeitems"] == 2
    em.set_printoptions(profile="full")
    assert em.get_printoptions()["threshold"] == float("inf")
    em.set_printoptions(profile="full", precision=6)       # explicit values win
    assert em.get_printoptions()["precision"] == 6
    em.set_printoptions(profile="default")
    assert em.get_printoptions()["threshold"] == 1000


def test_full_profile_prints_everything():
    t = em.arange(2000)
    assert "..." in repr(t)
    em.set_printoptions(profile="full")
    text = repr(t)
    assert "..." not in text
    assert text.count(",") == 1999 and text.endswith("1999])")


def test_sci_mode_is_reset_by_every_call_like_pytorch():
    em.set_printoptions(sci_mode=True)
    em.set_printoptions(precision=3)            # sci_mode goes back to None (automatic)
    assert em.get_printoptions()["sci_mode"] is None
    assert repr(em.tensor([1.5])) == "tensor([1.500])"


def test_printoptions_context_manager_restores():
    t = em.tensor([1.23456789])
    with em.printoptions(precision=2, sci_mode=True):
        assert repr(t) == "tensor([1.23e+00])"
        assert em.get_printoptions()["precision"] == 2
    assert repr(t) == "tensor([1.2346])"
    assert em.get_printoptions()["sci_mode"] is None
    with pytest.raises(KeyError), em.printoptions(precision=1):
        raise KeyError("inside")
    assert em.get_printoptions()["precision"] == 4


def test_bad_printoptions():
    with pytest.raises(ValueError, match="set_printoptions: profile"):
        em.set_printoptions(profile="tiny")
    with pytest.raises(ValueError, match="set_printoptions: precision"):
        em.set_printoptions(precision=-1)
    assert em.get_printoptions()["precision"] == 4


# ------------------------------------------------------------------ autograd suffixes

class AddBackward0:
    """Stands in for a node of ember.autograd (named after its class)."""


class Node:
    """A node class that names itself (the other convention)."""

    def name(self):
        return "MulBackward0"


def test_grad_fn_suffix():
    def recorder(op, inputs, out, attrs):
        out._set_autograd(AddBackward0() if op == "add" else Node(), True)

    previous = _core.set_recorder(recorder)
    try:
        x = em.tensor([1., 2.], requires_grad=True)
        assert repr(x) == "tensor([1., 2.], requires_grad=True)"
        assert repr(x + 1) == "tensor([2., 3.], grad_fn=<AddBackward0>)"
        assert repr(x * 3) == "tensor([3., 6.], grad_fn=<MulBackward0>)"
        assert repr((x + 1).detach()) == "tensor([2., 3.])"
    finally:
        _core.set_recorder(previous)


def test_suffixes_wrap_past_linewidth():
    # (expected strings checked against PyTorch)
    t = em.arange(12, dtype=em.int32) * 100000
    assert repr(t) == ("tensor([      0,  100000,  200000,  300000,  400000,  500000,  600000,"
                       "  700000,\n"
                       "         800000,  900000, 1000000, 1100000], dtype=ember.int32)")
    with em.printoptions(linewidth=60):
        assert repr(em.arange(4, dtype=em.int32)) == "tensor([0, 1, 2, 3], dtype=ember.int32)"
        assert repr(em.arange(14, dtype=em.int32) * 1000) == (
            "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,\n"
            "         7000,  8000,  9000, 10000, 11000, 12000, 13000],\n"
            "       dtype=ember.int32)")


def test_device_suffix():
    # a tensor that claims to live on cuda:0 (no data is read with tensor_contents)
    host = em.zeros(2)
    fake = _core.as_strided_from(
        _core.storage_from_pointer(host.data_ptr(), 8, host, "cuda:0"),
        em.float32, (2,), (1,), 0)
    assert fake.__repr__(tensor_contents="[0., 0.]") == \
        "tensor([0., 0.], device='cuda:0')"
    fake1 = _core.as_strided_from(
        _core.storage_from_pointer(host.data_ptr(), 8, host, "cuda"), em.int32, (2,), (1,), 0)
    assert fake1.__repr__(tensor_contents="[0, 0]") == \
        "tensor([0, 0], device='cuda:0', dtype=ember.int32)"


def test_subclass_prefix():
    class MyTensor(em.Tensor):
        pass

    t = em.tensor([1., 2.])
    sub = _core.as_strided_from(t.untyped_storage(), em.float32, (2,), (1,), 0)
    sub.__class__ = MyTensor
    assert repr(sub) == "MyTensor([1., 2.])"


# ------------------------------------------------------------------------------ speed

def test_huge_tensors_print_only_their_corners():
    # 10**12 elements (a zero-stride view): printing must not visit them
    big = em.zeros(1).expand(1_000_000, 1_000_000)
    start = time.perf_counter()
    text = repr(big)
    assert time.perf_counter() - start < 0.5
    assert text == ("tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n"
                    "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                    "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                    "        ...,\n"
                    "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                    "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                    "        [0., 0., 0.,  ..., 0., 0., 0.]])")


def test_printing_many_dims():
    t = em.arange(2 ** 11).reshape((2,) * 11)
    text = repr(t)
    assert text.startswith("tensor([[[[[[[[[[[   0,    1],")
    assert text.endswith("[2046, 2047]]]]]]]]]]])")
