// Lab behaviour (progressive enhancement over htmx).
