"""Pure statistics and models: the noise a comparison carries (variance components, profiles)."""
