"""Dashboard sessions kept server-side, so signing out ends a session for good.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

Mirrors storage.models.UiSession; tests/service/test_migrations.py checks that
the models and the migrations still agree on PostgreSQL and SQLite.
"""
from __future__ import annotations

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: Union[str, None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('ui_sessions',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('key_id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['key_id'], ['api_keys.id'], name=op.f('fk_ui_sessions_key_id_api_keys'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_ui_sessions_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ui_sessions'))
    )
    op.create_index(op.f('ix_ui_sessions_expires_at'), 'ui_sessions', ['expires_at'], unique=False)
    op.create_index(op.f('ix_ui_sessions_key_id'), 'ui_sessions', ['key_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_ui_sessions_key_id'), table_name='ui_sessions')
    op.drop_index(op.f('ix_ui_sessions_expires_at'), table_name='ui_sessions')
    op.drop_table('ui_sessions')
