"""Building blocks of stack images: hpccm's where it has them, repro's own (own.py) where not."""
