"""Proposers: what turns a branch's best candidate into its next child (tuner, LLM agent)."""
