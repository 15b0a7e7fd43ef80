"""Classes, students, questions, answers and wrong join codes.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "classes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("code", sa.String(16), nullable=False, unique=True),
        sa.Column("teacher_key", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("closed_at", sa.Float, nullable=True),
    )
    op.create_table(
        "students",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("key", sa.String(64), nullable=False, unique=True),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("joined_at", sa.Float, nullable=False),
        sa.Column("window_start", sa.Float, nullable=False),
        sa.Column("window_count", sa.Integer, nullable=False),
    )
    op.create_table(
        "questions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("truth", sa.JSON, nullable=False),
        sa.Column("asked_at", sa.Float, nullable=False),
        sa.Column("revealed_at", sa.Float, nullable=True),
    )
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("question_id", sa.Integer,
                  sa.ForeignKey("questions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("answered_at", sa.Float, nullable=False),
        sa.UniqueConstraint("question_id", "student_id", name="one_answer_per_student"),
    )
    op.create_table(
        "join_failures",
        sa.Column("client", sa.String(128), primary_key=True),
        sa.Column("window_start", sa.Float, nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    for table in ("join_failures", "answers", "questions", "students", "classes"):
        op.drop_table(table)
