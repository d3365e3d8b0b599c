"""Reports: the audit report model, atomic writers, and the one HTML renderer with its templates."""
