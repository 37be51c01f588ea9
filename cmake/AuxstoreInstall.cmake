# install rules and package config (cmake --install)
