"""The steps of a publication (``publisher`` runs them in order), functions over its state
(``state.Publication``)."""
