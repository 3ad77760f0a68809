"""Audit maths: coverage per difficulty bin, DDM, Maximum Gap, test information, re-weighted leaderboard.

Every measure is computed per posterior draw (vectorised over draws) and reported with credible
intervals. :func:`audit` runs them all; the modules hold the plain per-draw functions and their formulas.
"""

from irtbayes.audit.coverage import CoverageDraws, bin_codes, count_items, coverage, coverage_table
from irtbayes.audit.draws import fit_identity
from irtbayes.audit.folder import check_audit_source, load_audit, write_audit
from irtbayes.audit.gaps import GapDraws, GapLocation, GapParts, edge_gaps, gap_location, gap_parts, widest_gap
from irtbayes.audit.information import item_curves, scope_curves, test_information, theta_grid
from irtbayes.audit.mismatch import ddm_shape_tv, ddm_shape_w1, ddm_tv, ddm_w1, ddm_w1_from_shape
from irtbayes.audit.ranking import (
    ahead_probability,
    draw_ranks,
    indistinguishable_groups,
    reweighted_accuracy,
    saturation,
    unrepresented_mass,
)
from irtbayes.audit.result import AuditResult
from irtbayes.audit.run import audit
from irtbayes.audit.settings import AuditSettings
from irtbayes.audit.tables import rank_interval
from irtbayes.audit.targets import (
    Target,
    bin_edges,
    default_range,
    group_target,
    read_target,
    uniform_target,
    weights_target,
)

__all__ = [
    "AuditResult",
    "AuditSettings",
    "CoverageDraws",
    "GapDraws",
    "GapLocation",
    "GapParts",
    "Target",
    "ahead_probability",
    "audit",
    "bin_codes",
    "bin_edges",
    "check_audit_source",
    "count_items",
    "coverage",
    "coverage_table",
    "ddm_shape_tv",
    "ddm_shape_w1",
    "ddm_tv",
    "ddm_w1",
    "ddm_w1_from_shape",
    "default_range",
    "draw_ranks",
    "edge_gaps",
    "fit_identity",
    "gap_location",
    "gap_parts",
    "group_target",
    "indistinguishable_groups",
    "item_curves",
    "load_audit",
    "rank_interval",
    "read_target",
    "reweighted_accuracy",
    "saturation",
    "scope_curves",
    "test_information",
    "theta_grid",
    "uniform_target",
    "unrepresented_mass",
    "weights_target",
    "widest_gap",
    "write_audit",
]
