"""Pydantic model of the Atlas publication record, schemaVersion 1."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Record(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")


class SectionRef(_Record):
    """One section as published: a half-open range ``[start, end)`` of ``content``."""

    id: str = Field(pattern=r"^section-\d+$")
    title: str = Field(min_length=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> "SectionRef":
        if self.end <= self.start:
            raise ValueError(f"end ({self.end}) must be greater than start ({self.start})")
        return self


class Citation(_Record):
    title: str
    url: str


class LessonRecord(_Record):
    """The fields of the record that the app reads. Unknown fields are kept out of the model."""

    schema_version: Literal[1] = Field(alias="schemaVersion")
    id: str
    title: str
    description: str
    category: str | None = None
    format: str | None = None
    topic: str | None = None
    version: str
    status: str | None = None
    revision_date: str = Field(alias="revisionDate")
    canonical_url: str = Field(alias="canonicalUrl")
    interactive_url: str | None = Field(default=None, alias="interactiveUrl")
    artifact_url: str | None = Field(default=None, alias="artifactUrl")
    rights_url: str = Field(alias="rightsUrl")
    license: str | None = None
    evidence_scope: str = Field(alias="evidenceScope")
    content_format: Literal["text/markdown"] = Field(alias="contentFormat")
    content: str
    content_hash: str = Field(alias="contentHash", pattern=r"^[0-9a-f]{64}$")
    content_length: int = Field(alias="contentLength", ge=0)
    sections: list[SectionRef] = Field(min_length=1)
    citations: list[Citation] = []
