"""Infrastructure and the typed data model: what every stage stands on, importing none of them."""
