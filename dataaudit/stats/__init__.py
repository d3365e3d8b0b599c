from dataaudit.stats.lengths import LengthStats

__all__ = ["LengthStats"]
