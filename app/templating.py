"""The one Jinja2 environment: renders a whole page, or one `{% block %}` of it alone."""

from jinja2_fragments.fastapi import Jinja2Blocks

from app.settings import get_settings

templates = Jinja2Blocks(directory=str(get_settings().templates_dir))
