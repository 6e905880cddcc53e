"""The agents' memory: strategy outcomes per job (the team's AVOID list) and LLM token counts per job.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

`strategy_outcomes` holds, per job and strategy label, how many plans were tried and
how many succeeded (service/strategy_memory.py computes the AVOID list from it, with
the jobs it rests on). `jobs` gains the LLM usage of the job (calls, tokens, cost).
tests/service/test_migrations.py checks models == migrations on PostgreSQL and SQLite.
"""
from __future__ import annotations

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: Union[str, None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_JOB_COLUMNS = ('llm_calls', 'llm_prompt_tokens', 'llm_completion_tokens', 'llm_cost')


def upgrade() -> None:
    op.create_table('strategy_outcomes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('strategy', sa.String(length=64), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('successes', sa.Integer(), nullable=False),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_strategy_outcomes_job_id_jobs'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_strategy_outcomes_team_id_teams'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_strategy_outcomes')),
    sa.UniqueConstraint('job_id', 'strategy', name='uq_strategy_outcomes_job_id_strategy')
    )
    op.create_index('ix_strategy_outcomes_team_strategy', 'strategy_outcomes', ['team_id', 'strategy'],
                    unique=False)
    # Batch mode: SQLite alters a table by copying it (PostgreSQL runs plain ALTERs). The constant
    # server defaults give existing rows "no LLM usage".
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('llm_calls', sa.Integer(), server_default='0', nullable=False))
        batch.add_column(sa.Column('llm_prompt_tokens', sa.BigInteger(), server_default='0', nullable=False))
        batch.add_column(sa.Column('llm_completion_tokens', sa.BigInteger(), server_default='0', nullable=False))
        batch.add_column(sa.Column('llm_cost', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        for name in _JOB_COLUMNS:
            batch.drop_column(name)
    op.drop_index('ix_strategy_outcomes_team_strategy', table_name='strategy_outcomes')
    op.drop_table('strategy_outcomes')
