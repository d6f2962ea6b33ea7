"""What the product does: inbox, consolidation, knowledge, pinned context, episodes, retrieval,
prompts, jobs, backup.
"""
