"""Sinusoidal table and RoPE against the seed's formulas and properties (seed 3.4)."""

from __future__ import annotations

import math

import torch

from model.own.position_encoding import rope_rotate, sinusoidal_table


def test_sinusoidal_table_equals_the_seed_formula():
    table = sinusoidal_table(50, 512)
    assert table.shape == (50, 512)
    for pos in (0, 1, 7, 49):
        for i in (0, 1, 100, 255):
            angle = pos / 10000 ** (2 * i / 512)
            assert table[pos, 2 * i].item() == torch.tensor(math.sin(angle)).float().item()
            assert table[pos, 2 * i + 1].item() == torch.tensor(math.cos(angle)).float().item()


def test_sinusoidal_rows_are_distinct_and_fast_dimensions_turn_faster():
    table = sinusoidal_table(64, 128)
    assert torch.unique(table, dim=0).shape[0] == 64
    # the first pair turns once per 2π positions, the last pair hardly moves over 64 positions
    assert table[:, 0].diff().abs().mean() > 10 * table[:, 126].diff().abs().mean()


def test_rope_keeps_vector_norms():
    torch.manual_seed(0)
    x = torch.randn(3, 10, 64, dtype=torch.float64)  # [head, pos, d_head]
    rotated = rope_rotate(x, torch.arange(10))
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))


def test_rope_dot_product_depends_only_on_the_offset():
    torch.manual_seed(0)
    q = torch.randn(64, dtype=torch.float64)
    k = torch.randn(64, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        q_m = rope_rotate(q.view(1, 64), torch.tensor([m]))
        k_n = rope_rotate(k.view(1, 64), torch.tensor([n]))
        return (q_m @ k_n.T).item()

    for offset in (0, 1, 5, 17):
        values = [score(m + offset, m) for m in (0, 3, 40, 500)]
        assert max(values) - min(values) < 1e-9
    assert abs(score(5, 0) - score(6, 0)) > 1e-6  # and it does change with the offset


def test_rope_at_position_zero_is_the_identity():
    x = torch.randn(4, 1, 16)
    torch.testing.assert_close(rope_rotate(x, torch.tensor([0])), x)
