"""dsparkctl: diagnose, patch and prove DeepSeek-V4-Flash + DSpark deployments on SM120."""

__version__ = "0.1.0"
